package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/oauth"
)

// grantSource is the harness's TokenSource, as the dashboard's: the
// access token of the last sign-in, none before one.
type grantSource struct{ grant atomic.Pointer[oauth.Grant] }

func (s *grantSource) Token(context.Context) (string, error) {
	if g := s.grant.Load(); g != nil {
		return g.AccessToken, nil
	}
	return "", nil
}

// The client side of the MCP conformance suite: the suite starts a mock
// server per scenario and runs a client command with the server's URL as
// its last argument. That command is this test binary, with harnessEnv
// set: it does with the discovery package what Switchboard does with a
// server (a held session: the handshake, tools/list, then calls through
// Session.Call with the tool's pin, as the MCP endpoint routes them).

// maxSignIns bounds the sign-ins of one harness run.
const maxSignIns = 3

// harnessEnv makes the test binary the suite's client (see TestMain).
const harnessEnv = "SWITCHBOARD_CONFORMANCE_CLIENT"

// runConformanceClientIfAsked runs the client harness and exits, when
// the test binary was started as the suite's client.
func runConformanceClientIfAsked() {
	if os.Getenv(harnessEnv) == "" || len(os.Args) < 2 {
		return
	}
	os.Exit(conformanceClient(os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO"),
		os.Getenv("MCP_CONFORMANCE_CONTEXT"), os.Stderr))
}

// conformanceClient opens a session to url and calls every tool the
// server lists that Switchboard would offer (a valid one), each once,
// with the arguments the scenario asks for: those in the scenario's
// context (toolCalls), the inputSchema of json_schema_2020_12_tool echoed
// back as it was received (json-schema-2020-12-preservation), two numbers
// for add_numbers (tools_call), and otherwise none. It returns the exit
// code: 0 when every call was answered.
func conformanceClient(url, scenario, scenarioContext string, log io.Writer) int {
	var sc struct {
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
		// A pre-registered client (auth/pre-registration).
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if scenarioContext != "" {
		if err := json.Unmarshal([]byte(scenarioContext), &sc); err != nil {
			fmt.Fprintf(log, "harness: MCP_CONFORMANCE_CONTEXT: %v\n", err)
			return 2
		}
	}
	// Within the suite's 30 s per scenario, which runs them all at once:
	// under the race detector on two cores, that is slow going.
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Second)
	defer cancel()
	v := NewVerifier(Limits{}, nil)
	token := &grantSource{}
	target := Target{Transport: TransportHTTP, URL: url, Token: token}
	// The suite's authorization servers approve at once and redirect to
	// any URI; its Client ID Metadata Document URL is fixed.
	client := oauth.ClientInfo{RedirectURI: "http://localhost:3000/callback", MetadataURL: "https://conformance-test.local/client-metadata.json",
		ClientID: sc.ClientID, ClientSecret: sc.ClientSecret}
	signIns := 0
	var grant *oauth.Grant
	// signedIn signs in when err asks for it (a 401, or a 403
	// insufficient_scope): at most maxSignIns times in all, so that a
	// server that never accepts a token cannot hold the client in a loop.
	signedIn := func(err error) bool {
		var e *Error
		if !errors.As(err, &e) || e.Class != ClassAuth || signIns >= maxSignIns {
			return false
		}
		signIns++
		g, err := v.SignIn(ctx, url, *e.Auth, client, grant, v.AuthorizeNonInteractive)
		if err != nil {
			fmt.Fprintf(log, "harness (%s): sign in: %v\n", scenario, err)
			return false
		}
		grant = g
		token.grant.Store(g)
		return true
	}
	open := func() (*Session, error) {
		for {
			s, err := v.Open(ctx, target, 20*time.Second)
			if err == nil || !signedIn(err) {
				return s, err
			}
		}
	}
	s, err := open()
	if err != nil {
		fmt.Fprintf(log, "harness (%s): open %s: %v\n", scenario, url, err)
		return 1
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	tools := s.Tools()

	type call struct {
		name string
		args any
	}
	var calls []call
	if len(sc.ToolCalls) > 0 {
		for _, c := range sc.ToolCalls {
			calls = append(calls, call{c.Name, c.Arguments})
		}
	} else {
		names := make([]string, 0, len(tools))
		for name, t := range tools {
			if t.State != ToolInvalid {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			var args any = map[string]any{}
			switch name {
			case "add_numbers":
				args = map[string]any{"a": 2, "b": 3}
			case "json_schema_echo":
				args = map[string]any{"schema": tools["json_schema_2020_12_tool"].InputSchema}
			}
			calls = append(calls, call{name, args})
		}
	}
	failed := 0
	for _, c := range calls {
		t, ok := tools[c.name]
		if !ok || t.State == ToolInvalid {
			fmt.Fprintf(log, "harness (%s): tool %s is not offered (listed: %v, problems %q)\n", scenario, c.name, ok, t.Problems)
			failed++
			continue
		}
		res, err := s.Call(ctx, c.name, t.Pin, c.args, 0)
		for err != nil && signedIn(err) { // step-up: a token with the scopes the call needs
			s.Close()
			if s, err = open(); err != nil {
				fmt.Fprintf(log, "harness (%s): open again %s: %v\n", scenario, url, err)
				return 1
			}
			res, err = s.Call(ctx, c.name, t.Pin, c.args, 0)
		}
		switch {
		case err != nil:
			fmt.Fprintf(log, "harness (%s): call %s: %v\n", scenario, c.name, err)
			failed++
		case res.IsError:
			fmt.Fprintf(log, "harness (%s): call %s answered an error result\n", scenario, c.name)
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The terminal gets one line a verification (server, outcome, tool
// count, duration) and one a routed call (agent, tool, decision,
// outcome, duration), as text by default and as JSON objects with
// -log-format json; a secret of a server that leaks it never appears.
func TestLogLines(t *testing.T) {
	const secret = "pg-secret-7a41c9"
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			d := liveDashboard{token: strings.Repeat("d", 64), db: filepath.Join(t.TempDir(), "sb.db")}
			mcpToken := strings.Repeat("m", 32)
			s := startServeArgs(t, []string{"-addr", "127.0.0.1:0", "-log-format", format},
				map[string]string{"SWITCHBOARD_DB": d.db, "SWITCHBOARD_TOKEN": d.token, "SWITCHBOARD_MCP_TOKEN": mcpToken})
			defer s.stop()
			d.base = s.base
			d.addFixture(t) // verified: 3 tools; read is allow
			d.api(t, http.MethodPost, "/api/v1/servers", map[string]any{"id": "leaky", "transport": "stdio", "command": fixture,
				"env": map[string]string{"FIXTURE_MODE": "crash", "FIXTURE_SECRET": secret}}, http.StatusCreated)
			d.api(t, http.MethodPost, "/api/v1/servers/leaky/verify", map[string]any{"confirm": true}, http.StatusAccepted)
			callRead(t, s.base, mcpToken)

			want := map[string]map[string]string{ // message → attributes
				"verified":                     {"server": "fx", "outcome": "success", "tools": "3"},
				"verification did not succeed": {"server": "leaky", "outcome": "failed", "class": "exited"},
				"routed call":                  {"agent": "log-test-agent 1", "tool": "fx__read", "decision": "allowed", "outcome": "ok"},
			}
			var lines []map[string]string
			deadline := time.Now().Add(20 * time.Second)
			for {
				lines = parseLog(t, format, s.stderr.String())
				if len(findLines(lines, want)) == len(want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			found := findLines(lines, want)
			for msg, attrs := range want {
				l, ok := found[msg]
				if !ok {
					t.Errorf("no %q line with %v in the log:\n%s", msg, attrs, s.stderr.String())
					continue
				}
				if _, err := time.ParseDuration(l["duration"]); err != nil {
					t.Errorf("%q line's duration = %q; want a duration", msg, l["duration"])
				}
			}
			if strings.Contains(s.stderr.String(), secret) || strings.Contains(s.stdout.String(), secret) {
				t.Errorf("the server's secret is in the output:\n%s", s.stderr.String())
			}
			for _, tok := range []string{d.token, mcpToken} {
				if strings.Contains(s.stderr.String(), tok) {
					t.Errorf("a token is in the log:\n%s", s.stderr.String())
				}
			}
		})
	}
}

// callRead calls fx__read once through /mcp, as an agent.
func callRead(t *testing.T, base, token string) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	agent := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	if _, err := agent.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
		ClientInfo: mcp.Implementation{Name: "log-test-agent", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "fx__read"}}); err != nil {
		t.Fatal(err)
	}
}

// parseLog reads the log's records as attribute maps ("msg" among them),
// each line a record: JSON objects, or key=value text.
func parseLog(t *testing.T, format, out string) []map[string]string {
	t.Helper()
	var recs []map[string]string
	for _, line := range strings.Split(out, "\n") {
		rec := map[string]string{}
		switch {
		case format == "json" && strings.HasPrefix(line, "{"):
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("a log line is not JSON: %v\n%s", err, line)
			}
			for k, v := range m {
				rec[k] = fmt.Sprint(v)
			}
		case format == "text":
			// The human lines, read back into the attributes they say.
			if m := verifiedLine.FindStringSubmatch(line); m != nil {
				rec = map[string]string{"msg": "verified", "server": m[1], "outcome": "success", "tools": m[2], "duration": m[3], "trigger": m[4]}
			} else if m := failedLine.FindStringSubmatch(line); m != nil {
				rec = map[string]string{"msg": "verification did not succeed", "server": m[1], "outcome": m[2], "class": m[3], "phase": m[4], "duration": m[5], "trigger": m[6], "err": m[7]}
			} else if m := callLine.FindStringSubmatch(line); m != nil {
				rec = map[string]string{"msg": "routed call", "agent": m[1], "tool": m[2], "decision": m[3], "by": m[4], "outcome": m[5], "duration": m[6]}
			} else {
				continue
			}
		default:
			continue
		}
		recs = append(recs, rec)
	}
	return recs
}

// The text format's lines for a verification and a routed call.
var (
	verifiedLine = regexp.MustCompile(`^\d\d:\d\d:\d\d (\S+): verified, (\d+) tools?, in (\S+) \((.+)\)$`)
	failedLine   = regexp.MustCompile(`^\d\d:\d\d:\d\d (\S+): verification (\w+) \((\w+) in (\w+)\) after (\S+) \(([^)]+)\): (.*)$`)
	callLine     = regexp.MustCompile(`^\d\d:\d\d:\d\d (.+) called (\S+): (\w+) by (\S+), (\w+), (\S+)(?:: .*)?$`)
)

// findLines is, for each wanted message, the first record with that
// message and the wanted attributes.
func findLines(recs []map[string]string, want map[string]map[string]string) map[string]map[string]string {
	found := map[string]map[string]string{}
next:
	for _, rec := range recs {
		attrs, ok := want[rec["msg"]]
		if _, seen := found[rec["msg"]]; !ok || seen {
			continue
		}
		for k, v := range attrs {
			if rec[k] != v {
				continue next
			}
		}
		found[rec["msg"]] = rec
	}
	return found
}

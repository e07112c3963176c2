package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The real @modelcontextprotocol/server-everything behind /mcp, used by
// real agents of two SDKs (mcp-go's client, and the official TypeScript
// SDK's v2 client run by e2e/mcp/agent.mjs), each in both protocol eras:
// what the server asks during a call (a model's message, a form, a URL
// to visit, the roots) reaches the agent and its answer comes back in
// the result, its progress reaches the agent under the agent's own
// token, and its log messages reach the agent during the call.

var (
	// everythingJS is server-everything's entry point, as `npm ci` in e2e
	// installs it.
	everythingJS, _ = filepath.Abs("../../e2e/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	// tsClientPkg is the TypeScript SDK's v2 client, which agent.mjs uses.
	tsClientPkg, _ = filepath.Abs("../../e2e/node_modules/@modelcontextprotocol/client/package.json")
	tsAgentJS, _   = filepath.Abs("../../e2e/mcp/agent.mjs")
)

// everythingTools are the server's tools the agents call, and what each
// must be called with: the four that ask the agent are listed by the
// server only to a client that declares what they ask.
var everythingTools = map[string]map[string]any{
	"trigger-sampling-request":       {"prompt": samplingPrompt},
	"trigger-elicitation-request":    {},
	"trigger-url-elicitation":        {"url": "https://example.com/sign"},
	"get-roots-list":                 {},
	"trigger-long-running-operation": {"duration": 6, "steps": 3},
	"toggle-simulated-logging":       {},
	// Runs only as an MCP task: Switchboard calls it as one.
	"simulate-research-query": {"topic": "tides"},
}

const samplingPrompt = "what is a switchboard?"

// everythingCall is what an agent got from one of server-everything's
// tools: the text of its result, or the error of the call.
type everythingCall struct {
	text    string
	isError bool
	err     string
}

// everythingRun is what an agent got from server-everything's tools.
type everythingRun struct {
	offered []string
	calls   map[string]everythingCall
	// progress is the progressToken of each notifications/progress the
	// agent heard during trigger-long-running-operation.
	progress []any
	// logs is the data of each notifications/message the agent heard
	// during toggle-simulated-logging (or just after it).
	logs []string
}

// wantAgent is what an agent's answers make server-everything's results
// say.
type wantAgent struct {
	name          string
	model         string // the model its sampling answer names
	sampled       string // the text its model answers the tool's prompt
	formLines     []string
	roots         []string
	progressToken string
}

// newEverythingEnv is an endpoint serving the real server-everything
// (stdio) as "everything", verified and with each tool the agents call
// allowed. Node and the npm packages are needed: a machine without them
// fails the test rather than skipping what it checks.
func newEverythingEnv(t *testing.T) (*env, string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	needNPM(t, everythingJS)
	e := newEnv(t)
	e.createServer(map[string]any{"id": "everything", "name": "Everything", "transport": "stdio", "command": "node",
		"args": []string{everythingJS, "stdio"}, "default_policy": "allow"})
	if status := e.verify("everything"); status != "success" {
		t.Fatalf("verify everything = %s", status)
	}
	tools := e.tools("everything")
	// The tools the server lists only to clients that can answer them are
	// in the catalog, each with what it needs.
	for _, name := range []string{"trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation", "get-roots-list"} {
		if tool, ok := tools[name]; !ok || len(tool.Needs) == 0 {
			t.Fatalf("%s after verification: %+v, %v; want it in the catalog with what it needs", name, tool, ok)
		}
	}
	for name := range everythingTools {
		e.setPolicy("everything", name, "allow")
	}
	return e, node
}

// needNPM fails t unless the file of e2e's npm packages is installed.
func needNPM(t *testing.T, file string) {
	t.Helper()
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the e2e npm packages are not installed (%v): run `npm ci --prefix e2e` in the repository root", err)
	}
}

// check fails t for each of the run's results that does not carry what
// the agent answered.
func (r everythingRun) check(t *testing.T, a wantAgent) {
	t.Helper()
	for name := range everythingTools {
		if !slices.Contains(r.offered, "everything__"+name) {
			t.Errorf("%s is not offered everything__%s: %q", a.name, name, r.offered)
		}
	}
	want := map[string][]string{
		"trigger-sampling-request":    {"LLM sampling result:", `"model": "` + a.model + `"`, a.sampled},
		"trigger-elicitation-request": append([]string{"User provided the requested information"}, a.formLines...),
		"trigger-url-elicitation":     {"User completed the URL elicitation flow", "URL: https://example.com/sign"},
		"get-roots-list":              {fmt.Sprintf("Current MCP Roots (%d total)", len(a.roots))},
		// A second in three steps, with a progress notification after each.
		"trigger-long-running-operation": {"Long running operation completed. Duration: 6 seconds, Steps: 3."},
		"toggle-simulated-logging":       {"Started simulated, random-leveled logging"},
		// Four stages of a second, then the task's result.
		"simulate-research-query": {"# Research Report: tides", "Stage 4: Generating report ✓"},
	}
	for _, root := range a.roots {
		want["get-roots-list"] = append(want["get-roots-list"], "URI: "+root)
	}
	for name, parts := range want {
		c, ok := r.calls[name]
		if !ok || c.err != "" || c.isError {
			t.Errorf("%s calls %s: %+v; want a result", a.name, name, c)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(c.text, p) {
				t.Errorf("%s calls %s = %q; want it to say %q", a.name, name, c.text, p)
			}
		}
	}
	// server-everything sends a progress notification after each step:
	// at least two must have come, each under the agent's own token.
	if len(r.progress) < 2 {
		t.Errorf("%s heard %d progress notifications (tokens %v) during trigger-long-running-operation; want at least 2", a.name, len(r.progress), r.progress)
	}
	for _, token := range r.progress {
		if token != a.progressToken {
			t.Errorf("%s heard progress under the token %v; want its own, %q", a.name, token, a.progressToken)
		}
	}
	// The message toggle-simulated-logging writes as it starts comes just
	// before its result, and mcp-go's Streamable HTTP server (v1.2.1),
	// which serves /mcp, can lose a notification sent then (its forwarder
	// takes it off the session's channel, then loses the race to the
	// response, which ends the stream and drops it: a few in a hundred
	// under load). The server writes another every 5 s, so the 6-s
	// trigger-long-running-operation hears one too, far from its result:
	// either will do.
	if !slices.ContainsFunc(r.logs, isSimulatedLog) {
		t.Errorf("%s heard the log messages %q during toggle-simulated-logging; want one of the server's simulated messages", a.name, r.logs)
	}
}

// isSimulatedLog tells whether a log message's data is one that
// toggle-simulated-logging sends ("Info-level message", "Alert
// level-message", ...).
func isSimulatedLog(data string) bool {
	return strings.Contains(data, "-level message") || strings.Contains(data, " level-message")
}

// Agents built on mcp-go's client, as connectAnswering connects them.
func TestEverythingWithMCPGoAgents(t *testing.T) {
	e, _ := newEverythingEnv(t)
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			// Each era's agent has roots of its own: a server's session
			// that kept another agent's roots would show them.
			name := "go-agent-" + version[:4]
			a := answeringAgent{name}
			c := connectAnswering(t, e.base, version, a)
			var mu sync.Mutex
			var progress []any
			logs := make(chan string, 64)
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				switch n.Method {
				case string(mcp.MethodNotificationProgress):
					mu.Lock()
					progress = append(progress, n.Params.AdditionalFields["progressToken"])
					mu.Unlock()
				case string(mcp.MethodNotificationMessage):
					select {
					case logs <- fmt.Sprint(n.Params.AdditionalFields["data"]):
					default: // the test reads only the first few
					}
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// On a 2026-07-28 connection mcp-go keeps the level and sends
			// it in each request's _meta.
			//lint:ignore SA1019 the agent asks for log messages as its revision has it
			if err := c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
				t.Fatalf("set the log level: %v", err)
			}
			run := everythingRun{offered: c.Names(t), calls: map[string]everythingCall{}}
			token := "go-agent-progress-" + version
			call := func(name string) {
				req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "everything__" + name, Arguments: everythingTools[name]}}
				if name == "trigger-long-running-operation" {
					req.Params.Meta = &mcp.Meta{ProgressToken: token}
				}
				res, err := c.CallTool(ctx, req)
				if err != nil {
					run.calls[name] = everythingCall{err: err.Error()}
					return
				}
				var texts []string
				for _, content := range res.Content {
					if tc, ok := content.(mcp.TextContent); ok {
						texts = append(texts, tc.Text)
					}
				}
				run.calls[name] = everythingCall{text: strings.Join(texts, "\n"), isError: res.IsError}
			}
			// toggle-simulated-logging comes first: its first message is
			// written as the call starts, and Switchboard drops what a
			// server logs within 250 ms of the end of another request on
			// the session (it may be about that one), which a call just
			// after another would fall in. The agent's session upstream
			// is its own (it declares roots), so no other agent's request
			// comes just before.
			call("toggle-simulated-logging")
			// The message may be read just after the result (the next
			// comes only 5 s later).
			timeout := time.After(10 * time.Second)
		wait:
			for !slices.ContainsFunc(run.logs, isSimulatedLog) {
				select {
				case l := <-logs:
					run.logs = append(run.logs, l)
				case <-timeout:
					break wait
				}
			}
			for _, name := range []string{"trigger-sampling-request", "trigger-elicitation-request", "trigger-url-elicitation",
				"get-roots-list", "simulate-research-query", "trigger-long-running-operation"} {
				call(name)
			}
			mu.Lock()
			run.progress = slices.Clone(progress)
			mu.Unlock()
			for drained := false; !drained; { // what came during the later calls
				select {
				case l := <-logs:
					run.logs = append(run.logs, l)
				default:
					drained = true
				}
			}
			run.check(t, wantAgent{
				name:          name,
				model:         name + "-model",
				sampled:       "sampled Resource trigger-sampling-request context: " + samplingPrompt,
				formLines:     []string{"- Name: " + name},
				roots:         []string{"file:///work/" + name, "file:///tmp"},
				progressToken: token,
			})
		})
	}
}

// tsRun is what e2e/mcp/agent.mjs prints.
type tsRun struct {
	Era     string   `json:"era"`
	Offered []string `json:"offered"`
	Calls   map[string]struct {
		Text     string  `json:"text"` // null, read as "", if the call failed
		IsError  bool    `json:"isError"`
		Error    string  `json:"error"`
		Progress []any   `json:"progress"`
		Logs     []tsLog `json:"logs"`
	} `json:"calls"`
	LogsOutsideCalls []tsLog `json:"logsOutsideCalls"`
}

type tsLog struct {
	Level  string `json:"level"`
	Logger string `json:"logger"`
	Data   any    `json:"data"`
}

// Agents built on the official TypeScript SDK's v2 client
// (e2e/mcp/agent.mjs), which answers a 2026-07-28 call's input_required
// with the same handlers a 2025-era session's requests get, and calls
// again by itself.
func TestEverythingWithTypeScriptAgents(t *testing.T) {
	needNPM(t, tsClientPkg)
	e, node := newEverythingEnv(t)
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, tsAgentJS, e.base+"/mcp", testMCPToken, version)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			// A child of the agent left holding its pipes must not hold
			// the test.
			cmd.WaitDelay = 5 * time.Second
			if err := cmd.Run(); err != nil {
				t.Fatalf("agent.mjs at %s: %v\nstdout: %s\nstderr: %s", version, err, truncate(stdout.String()), truncate(stderr.String()))
			}
			if stderr.Len() > 0 {
				t.Logf("agent.mjs at %s wrote on stderr:\n%s", version, truncate(stderr.String()))
			}
			var out tsRun
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("agent.mjs at %s printed %q: %v", version, truncate(stdout.String()), err)
			}
			if out.Era != version {
				t.Fatalf("agent.mjs spoke %s; want %s", out.Era, version)
			}
			run := everythingRun{offered: out.Offered, calls: map[string]everythingCall{}}
			for name, c := range out.Calls {
				run.calls[name] = everythingCall{text: c.Text, isError: c.IsError, err: c.Error}
			}
			run.progress = out.Calls["trigger-long-running-operation"].Progress
			// agent.mjs waits a while for a message written during the
			// call but read just after its result (logsOutsideCalls).
			logged := out.LogsOutsideCalls
			for _, c := range out.Calls {
				logged = append(logged, c.Logs...)
			}
			for _, l := range logged {
				run.logs = append(run.logs, fmt.Sprint(l.Data))
			}
			run.check(t, wantAgent{
				name:          "ts-agent-" + version,
				model:         "ts-agent-model",
				sampled:       "ts-agent heard: Resource trigger-sampling-request context: " + samplingPrompt,
				formLines:     []string{"- Name: TS Agent", "- Email: ts-agent@example.com", "- Agreed to terms: true", "- Favorite Integer: 7"},
				roots:         []string{"file:///work/ts-agent", "file:///tmp"},
				progressToken: "ts-agent-progress-" + version,
			})
		})
	}
}

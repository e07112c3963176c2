package gateway_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
)

// A server's progress on an agent's call reaches the agent, in both
// protocol eras, under the progressToken the agent gave (not the one
// Switchboard gave the server), on the call's own stream, before the
// result.
func TestProgressReachesTheAgent(t *testing.T) {
	e := newEnv(t)
	e.createServer(map[string]any{"id": "steps", "name": "Steps", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-mode", "try-it"}, "default_policy": "allow"})
	if status := e.verify("steps"); status != "success" {
		t.Fatalf("verify steps = %s", status)
	}
	e.setPolicy("steps", "slow_steps", "allow")
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "progress-agent", Version: "1"})
			var mu sync.Mutex
			var heard []map[string]any
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationProgress) {
					mu.Lock()
					heard = append(heard, n.Params.AdditionalFields)
					mu.Unlock()
				}
			})
			token := "agent-token-" + version
			req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "steps__slow_steps",
				Arguments: map[string]any{"steps": 3, "delay_ms": 50}, Meta: &mcp.Meta{ProgressToken: token}}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				t.Fatalf("call = %+v, %v; want a result", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(heard) != 3 {
				t.Fatalf("progress notifications = %v; want 3, before the result", heard)
			}
			// Each may be written by a goroutine of its own (mcp-go):
			// compared in the order of their progress.
			slices.SortFunc(heard, func(a, b map[string]any) int { return cmp.Compare(a["progress"].(float64), b["progress"].(float64)) })
			for i, p := range heard {
				want := map[string]any{"progressToken": token, "progress": float64(i + 1), "total": float64(3),
					"message": fmt.Sprintf("step %d of 3 <done>", i+1)}
				if fmt.Sprint(p) != fmt.Sprint(want) {
					t.Errorf("progress %d = %v; want %v", i+1, p, want)
				}
			}
		})
	}
}

// An agent that gives up on a call stops it on the server: the
// server's handler sees its request cancelled, in both protocol eras.
func TestAnAgentsCancelStopsTheUpstreamCall(t *testing.T) {
	started, stopped := make(chan struct{}, 1), make(chan struct{}, 1)
	up := server.NewMCPServer("upstream", "1.0.0", server.WithToolCapabilities(false))
	up.AddTool(mcp.NewTool("wait", mcp.WithDescription("Waits until its call is cancelled.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done() // the test ends the call, or fails waiting
			stopped <- struct{}{}
			return nil, ctx.Err()
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(ts.Close)

	e := newEnv(t)
	e.createServer(map[string]any{"id": "up", "name": "Upstream", "transport": "http", "url": ts.URL + "/mcp", "default_policy": "allow"})
	if status := e.verify("up"); status != "success" {
		t.Fatalf("verify up = %s", status)
	}
	e.setPolicy("up", "wait", "allow")
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "cancelling-agent", Version: "1"})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "up__wait"}})
				done <- err
			}()
			select {
			case <-started:
			case err := <-done:
				t.Fatalf("the call ended before it reached the server: %v", err)
			}
			cancel()
			if err := <-done; err == nil {
				t.Error("the agent's cancelled call answered; want its cancellation")
			}
			select {
			case <-stopped:
			case <-time.After(time.Minute):
				t.Fatal("the server's handler was still running a minute after the agent cancelled")
			}
		})
	}
}

// A server's log messages during an agent's call reach that agent at the
// level the agent asked for (logging/setLevel on a 2025-era session, the
// request's logLevel at 2026-07-28), and no other agent.
func TestLogMessagesReachTheAgent(t *testing.T) {
	e := newEnv(t)
	e.createServer(map[string]any{"id": "logs", "name": "Logs", "transport": "stdio", "command": fixtureBin,
		"args": []string{"-mode", "asks"}, "default_policy": "allow"})
	if status := e.verify("logs"); status != "success" {
		t.Fatalf("verify logs = %s", status)
	}
	e.setPolicy("logs", "log_steps", "allow")
	for _, version := range []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "logging-agent", Version: "1"})
			other := mcptest.ConnectAs(t, e.base, testMCPToken, version, mcp.Implementation{Name: "other-agent", Version: "1"})
			var mu sync.Mutex
			heard := map[*mcptest.Client][]string{}
			for _, a := range []*mcptest.Client{c, other} {
				a.OnNotification(func(n mcp.JSONRPCNotification) {
					if n.Method == string(mcp.MethodNotificationMessage) {
						mu.Lock()
						heard[a] = append(heard[a], fmt.Sprint(n.Params.AdditionalFields["level"], " ", n.Params.AdditionalFields["data"]))
						mu.Unlock()
					}
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			//lint:ignore SA1019 the agent asks for log messages as its revision has it
			if err := c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelInfo}}); err != nil {
				t.Fatal(err)
			}
			if res, err := c.Call("logs__log_steps", nil); err != nil || res.IsError || mcptest.Text(res) != "done" {
				t.Fatalf("call = %+v, %v; want done", res, err)
			}
			mu.Lock()
			defer mu.Unlock()
			// mcp-go writes each notification from a goroutine of its own:
			// their order is not kept.
			slices.Sort(heard[c])
			if want := []string{"info map[step:info]", "warning map[step:warning]"}; fmt.Sprint(heard[c]) != fmt.Sprint(want) {
				t.Errorf("the agent heard %q; want %q (the server's messages at info and above)", heard[c], want)
			}
			if len(heard[other]) != 0 {
				t.Errorf("another agent heard %q; want nothing", heard[other])
			}
		})
	}
}

// A server's question that ends before the agent answers it (the
// server gave up waiting) is withdrawn: the agent hears
// notifications/cancelled for it, and its late answer is taken quietly,
// not logged as an error (the harness fails a test on any error logged).
func TestAQuestionTheServerGaveUpOnIsWithdrawn(t *testing.T) {
	up := server.NewMCPServer("upstream", "1.0.0", server.WithToolCapabilities(false))
	up.AddTool(mcp.NewTool("impatient", mcp.WithDescription("Asks the client's model, and gives up at once.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			//lint:ignore SA1019 a 2025-era server asks for sampling as that revision has it
			_, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{
				CreateMessageParams: mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("quick")}}, MaxTokens: 10}})
			return mcp.NewToolResultText(fmt.Sprintf("gave up: %v", err != nil)), nil
		})
	// A 2025-era server: it asks with a request of its own.
	ts := httptest.NewServer(server.NewStreamableHTTPServer(up, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125)))
	t.Cleanup(ts.Close)
	e := newEnv(t)
	e.createServer(map[string]any{"id": "imp", "name": "Impatient", "transport": "http", "url": ts.URL + "/mcp", "default_policy": "allow"})
	if status := e.verify("imp"); status != "success" {
		t.Fatalf("verify = %s", status)
	}
	e.setPolicy("imp", "impatient", "allow")
	slow := slowSampler{release: make(chan struct{}), answered: make(chan struct{})}
	c := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "slow-agent", Version: "1"},
		client.WithSamplingHandler(slow))
	cancelled := make(chan mcp.JSONRPCNotification, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationCancelled) {
			cancelled <- n
		}
	})
	res, err := c.Call("imp__impatient", nil)
	if err != nil || mcptest.Text(res) != "gave up: true" {
		t.Fatalf("call = %q, %v", mcptest.Text(res), err)
	}
	select {
	case n := <-cancelled:
		if n.Params.AdditionalFields["requestId"] == nil {
			t.Errorf("notifications/cancelled without the question's id: %+v", n.Params)
		}
	case <-time.After(time.Minute):
		t.Fatal("the agent never heard that the question was withdrawn")
	}
	close(slow.release) // the agent answers now, late: taken quietly
	<-slow.answered
	c.Names(t) // a round trip more: the answer's POST has gone meanwhile
}

// slowSampler answers a sampling request only once release is closed,
// and closes answered then.
type slowSampler struct{ release, answered chan struct{} }

func (s slowSampler) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	<-s.release
	defer close(s.answered)
	return &mcp.CreateMessageResult{Model: "slow", SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("late")}}, nil
}

// A server's question during a call waits for a person under the
// profile of the client that made the call (issue 38: the relay's
// approvals carried none, so a profile's named approvers did not bound
// who answered its servers' questions).
func TestAServersQuestionWaitsUnderItsCallersProfile(t *testing.T) {
	up := server.NewMCPServer("upstream", "1.0.0", server.WithToolCapabilities(false))
	up.AddTool(mcp.NewTool("consult", mcp.WithDescription("Asks the client's model.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			//lint:ignore SA1019 a 2025-era server asks for sampling as that revision has it
			res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{
				CreateMessageParams: mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("well?")}}, MaxTokens: 10}})
			if err != nil {
				return mcp.NewToolResultText("refused: " + err.Error()), nil
			}
			return mcp.NewToolResultText(fmt.Sprint(res.Content)), nil
		})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(up, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125)))
	t.Cleanup(ts.Close)
	e := newEnv(t)
	e.approvers.Store(1) // a person is there to answer
	e.createServer(map[string]any{"id": "con", "name": "Consultant", "transport": "http", "url": ts.URL + "/mcp",
		"default_policy": "allow", "asks": map[string]string{"sampling": "ask"}})
	if status := e.verify("con"); status != "success" {
		t.Fatalf("verify = %s", status)
	}
	e.setPolicy("con", "consult", "allow")
	e.saveProfile(store.Profile{ID: "ops", Name: "Ops", Mode: store.ProfileAll, Approvers: []string{"ann@example.com"}})
	token := e.connectWithProfile("Ops agent", "ops")
	answered := slowSampler{release: make(chan struct{}), answered: make(chan struct{})}
	close(answered.release)
	c := mcptest.ConnectAs(t, e.base, token, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "ops-agent", Version: "1"},
		client.WithSamplingHandler(answered))
	done := make(chan string, 1)
	go func() {
		res, err := c.Call("con__consult", nil)
		done <- fmt.Sprint(mcptest.Text(res), err)
	}()
	id := e.waitApproval()
	ap := e.ep.Approvals()[0]
	if ap.Request != store.AskSampling || ap.Profile != "ops" {
		t.Errorf("the server's question waits as %q under profile %q; want sampling, under ops", ap.Request, ap.Profile)
	}
	e.decide(id, "allow_once")
	select {
	case got := <-done:
		if strings.Contains(got, "refused") {
			t.Errorf("the call after its question was allowed = %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call still waits")
	}
}

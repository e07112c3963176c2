package gateway

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
)

// What a server asks of the agent during a routed call, relayed to that
// agent (see discovery.Asks): a 2025-era agent's session declared what it
// can answer, the server's session declares the same, and each request
// the server sends during the call is sent on to the agent on the call's
// stream, its answer passed back as the agent gave it.

// asksOf are the client features a 2025-era agent's session declared.
func asksOf(caps mcp.ClientCapabilities) discovery.Asks {
	a := discovery.Asks{Sampling: caps.Sampling != nil, Roots: caps.Roots != nil}
	if el := caps.Elicitation; el != nil {
		a.Elicitation = formElicitation(el)
		a.URLElicitation = el.URL != nil
	}
	return a
}

// agentRelay asks the agent of call (a 2025-era session's tools/call)
// what the call's server asks.
type agentRelay struct {
	srv  *server.MCPServer
	call context.Context // the agent's call: its session, and its end
}

// on is the context to ask the agent in: the call's (it names the
// agent's session), ended also when the server's request ends.
func (r agentRelay) on(ctx context.Context) (context.Context, context.CancelFunc) {
	asked, cancel := context.WithCancel(r.call)
	stop := context.AfterFunc(ctx, cancel)
	return asked, func() { stop(); cancel() }
}

func (r agentRelay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	ctx, cancel := r.on(ctx)
	defer cancel()
	//lint:ignore SA1019 relaying a 2025-era server's sampling to a 2025-era agent, as that revision has it
	return r.srv.RequestSampling(ctx, req)
}

func (r agentRelay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	ctx, cancel := r.on(ctx)
	defer cancel()
	return r.srv.RequestElicitation(ctx, req)
}

func (r agentRelay) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	ctx, cancel := r.on(ctx)
	defer cancel()
	return r.srv.RequestRoots(ctx, req)
}

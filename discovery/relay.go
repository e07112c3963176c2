package discovery

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// What a server asks of the agent whose call it serves. MCP lets a server
// ask its client, while it handles a request, for a model's message
// (sampling/createMessage), for the person's input (elicitation/create,
// as a form or by sending them to a URL) and for the client's roots
// (roots/list). Switchboard is the server's client, so it asks on: the
// session to the server declares what the calling agent declared (see
// Target.Asks), and each request the server sends during a call goes to
// that call's agent (see WithCallRelay). A request no agent can answer —
// one outside any call, or one the agent did not declare — is answered
// with an MCP error at once, never left waiting. A 2026-07-28 server's
// input_required result is answered the same way: mcp-go's client asks
// the handlers below, with the call's context, and retries the call.

// Asks are the client features a session to a server declares: what the
// server may ask, during a call, of the agent that made it.
type Asks struct {
	Sampling       bool // sampling/createMessage
	Elicitation    bool // elicitation/create, form mode
	URLElicitation bool // elicitation/create, URL mode
	Roots          bool // roots/list
	// Agent names the agent a session that declares Roots serves alone:
	// a server may keep the roots it was given for the whole session, so
	// one agent's roots must never stand for another's.
	Agent string
}

// Any reports whether a asks anything.
func (a Asks) Any() bool { return a.Sampling || a.Elicitation || a.URLElicitation || a.Roots }

// key tells sessions declaring different features apart in the pool: ""
// for none (the plain session every agent without them shares).
func (a Asks) key() string {
	if !a.Any() {
		return ""
	}
	var b strings.Builder
	b.WriteString("\x00asks:")
	for _, f := range []struct {
		on   bool
		name string
	}{{a.Sampling, "s"}, {a.Elicitation, "e"}, {a.URLElicitation, "u"}, {a.Roots, "r"}} {
		if f.on {
			b.WriteString(f.name)
		}
	}
	if a.Roots {
		b.WriteString("\x00agent:" + a.Agent)
	}
	return b.String()
}

// capabilities are the client capabilities a declares in the handshake.
func (a Asks) capabilities() mcp.ClientCapabilities {
	var c mcp.ClientCapabilities
	if a.Sampling {
		c.Sampling = &mcp.SamplingCapability{}
	}
	if a.Elicitation || a.URLElicitation {
		c.Elicitation = &mcp.ElicitationCapability{}
		if a.Elicitation {
			c.Elicitation.Form = &struct{}{}
		}
		if a.URLElicitation {
			c.Elicitation.URL = &struct{}{}
		}
	}
	if a.Roots {
		c.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{}
	}
	return c
}

// Relay answers what a server asks during a call, by asking the agent
// whose call it is (and whatever else the caller decides: a policy, a
// person). Its methods are called with the context of the server's
// request; they must end when it does.
type Relay interface {
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

type relayKey struct{}

// WithCallRelay returns a context whose tool calls (Session.Call, and so
// Pool.Call) have what the server asks during the call answered by r.
// Like WithCallProgress, it rides on the context so the layers between
// the caller and the session need not know.
func WithCallRelay(ctx context.Context, r Relay) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

// RelayOf is the relay WithCallRelay gave ctx, or nil.
func RelayOf(ctx context.Context) Relay { return relayOf(ctx) }

func relayOf(ctx context.Context) Relay {
	r, _ := ctx.Value(relayKey{}).(Relay)
	return r
}

// ErrNoAgent answers a server's request that no agent's call can answer:
// one sent outside a call, or while several calls share the session
// (stdio, where nothing says whose call a request belongs to).
var ErrNoAgent = errors.New("no call of an agent that can answer this request is in flight on this session")

// relays are the calls in flight on a session that declared Asks, and
// the handler of what the server asks (mcp-go's SamplingHandler,
// ElicitationHandler and RootsHandler).
type relays struct {
	mu sync.Mutex
	// serial is held by each call of a 2025-era session over stdio or
	// HTTP+SSE, where a server's request comes on the session's one
	// stream and names no call: one call at a time makes the request's
	// call the one in flight (see one). (A 2026-07-28 server asks in the
	// call's own result; a 2025-era one over Streamable HTTP on the
	// call's own stream: both come with the call's context.)
	serial chan struct{}
	byCall map[uint64]Relay
	next   uint64
	// alone reports whether one request is in flight on the session
	// (see Session.alone); nil: never.
	alone func() bool
}

// one waits, until ctx ends, for the session's calls in flight to end,
// and returns the function that lets the next one start.
func (rs *relays) one(ctx context.Context) (done func(), err error) {
	rs.mu.Lock()
	if rs.serial == nil {
		rs.serial = make(chan struct{}, 1)
	}
	serial := rs.serial
	rs.mu.Unlock()
	select {
	case serial <- struct{}{}:
		return func() { <-serial }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// add records r as the relay of a call in flight until the returned
// function is called.
func (rs *relays) add(r Relay) (done func()) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.byCall == nil {
		rs.byCall = map[uint64]Relay{}
	}
	rs.next++
	id := rs.next
	rs.byCall[id] = r
	return func() {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		delete(rs.byCall, id)
	}
}

// relayFor is the relay of the call a server's request with ctx belongs
// to: the one its context carries (over HTTP, mcp-go hands a request
// sent on a call's stream that call's context), else the only call in
// flight (stdio).
func (rs *relays) relayFor(ctx context.Context) (Relay, error) {
	if r := relayOf(ctx); r != nil {
		return r, nil
	}
	// Else the only call in flight, if it is the only request: a request
	// of the server's never goes to another call's agent (a read, a call
	// without a relay, the next call after one that ended).
	if rs.alone == nil || !rs.alone() {
		return nil, ErrNoAgent
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.byCall) != 1 {
		return nil, ErrNoAgent
	}
	for _, r := range rs.byCall {
		return r, nil
	}
	return nil, ErrNoAgent
}

func (rs *relays) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	r, err := rs.relayFor(ctx)
	if err != nil {
		return nil, err
	}
	return r.CreateMessage(ctx, req)
}

func (rs *relays) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	r, err := rs.relayFor(ctx)
	if err != nil {
		return nil, err
	}
	return r.Elicit(ctx, req)
}

func (rs *relays) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	r, err := rs.relayFor(ctx)
	if err != nil {
		return nil, err
	}
	return r.ListRoots(ctx, req)
}

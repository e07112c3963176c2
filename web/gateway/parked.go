package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// A 2026-07-28 agent cannot be sent requests: what a server asks during
// its call comes back to it as the call's input_required result, and the
// agent's retry carries the answers. So the call to the server runs on,
// parked, while the agent answers: its relay (see discovery.Relay) turns
// each question into an input_required result whose requestState names
// the parked call, and the agent's retry hands the answers to the
// question still waiting upstream — whichever era the server speaks (a
// 2025-era server's own request, or a 2026-07-28 server's input_required,
// which mcp-go's client answers through the same relay). A parked call is
// bound to the token that made it; one whose agent does not come back
// within the ask timeout is cancelled upstream and recorded as such.

// parkedState prefixes the requestState of a parked call's questions, to
// tell them from an approval's (see askPerson).
const parkedState = "relay:"

// maxParked bounds the calls parked at once; a call beyond it runs as
// one whose agent cannot answer (the server's questions are refused).
const maxParked = 256

// maxQuestions bounds the questions of one call (a 2026-07-28 server's
// are bounded by mcp-go's client too; a 2025-era server's are not).
const maxQuestions = 32

// parkedCall is a call to a server, running while its agent answers what
// the server asked.
type parkedCall struct {
	// id names the question the agent was last given (its requestState
	// after parkedState): a new one for each question, spent by the
	// answer.
	id      string
	tokenID string // the token that made the call; only it may answer
	// called and argsHash are the tool name and arguments as the agent
	// called: a retry must repeat them.
	called, argsHash string
	ctx              context.Context // the server's call
	// rec, args and start are the call's record as its answer will
	// close it (rec is the routing call's, filled in as it ran).
	rec   *store.Call
	args  any
	start time.Time

	cancel    context.CancelFunc
	questions chan *parkedQuestion // from the relay, to the agent
	done      chan struct{}        // closed when the server's call ended
	// kind is what the call is: a tool call (""), a prompts/get or a
	// resources/read (see fetch); res is its result, of that kind.
	kind store.ListedKind
	res  any
	err  error

	// asked is the question the agent was last given, and expiry ends
	// the call if no answer comes (Endpoint.parked.mu).
	asked  *parkedQuestion
	expiry *time.Timer
	n      int // questions asked (the relay's goroutines)
	nMu    sync.Mutex
	// askAsOne asks a 2025-era server's requests (its input is Input).
	askAsOne
}

// parkedQuestion is what a server asks at once, waiting for its answer:
// a 2025-era server's request (under a key of Switchboard's: q1, q2, …),
// or every question of a 2026-07-28 server's input_required, under the
// server's keys.
type parkedQuestion struct {
	requests mcp.InputRequests
	answer   chan mcp.InputResponses // buffered: the answer is never held up
}

// parkedCalls are the calls parked, by id.
type parkedCalls struct {
	mu     sync.Mutex
	m      map[string]*parkedCall // by the id of the question asked
	closed bool                   // Close has ended them
	wg     sync.WaitGroup         // the server calls' goroutines
}

// park makes the call to the server (upstream) with the relay of a
// 2026-07-28 agent, and answers the agent with what comes first: the
// call's end, or a question of the server's (input_required). rec, and
// the call's audit, are the routing call's until the call is parked;
// then resume (or the expiry) records it. cr.Kind says what the call is
// (a tool call, a prompts/get, a resources/read): upstream's result, and
// the input_required answer, are of that kind.
func (e *Endpoint) park(ctx context.Context, cr callRequest, rec *store.Call, start time.Time, upstream func(context.Context) (any, error)) (any, error) {
	e.parked.mu.Lock()
	full, closed := len(e.parked.m) >= maxParked, e.parked.closed
	e.parked.mu.Unlock()
	switch {
	case closed:
		return nil, errors.New("Switchboard is shutting down")
	case full:
		return upstream(ctx)
	}
	// The server's call outlives this request: the agent's retries
	// carry it on. Close, the expiry or the agent's giving up ends it.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &parkedCall{tokenID: cr.TokenID, called: cr.Called, argsHash: argsHash(cr.CalledArgs), ctx: pctx, rec: rec, args: cr.Args, start: start,
		kind: cr.Kind, cancel: cancel, questions: make(chan *parkedQuestion), done: make(chan struct{})}
	p.askAsOne.input = p.Input
	e.parked.wg.Add(1)
	go func() {
		defer e.parked.wg.Done()
		defer cancel()
		p.res, p.err = upstream(discovery.WithCallRelay(pctx, p))
		close(p.done)
	}()
	res, err, _ := e.next(ctx, p)
	return res, err
}

// resume hands a 2026-07-28 agent's answers to the question its parked
// call waits on, and answers with what comes next.
func (e *Endpoint) resume(ctx context.Context, cr callRequest) (any, error) {
	id := cr.Retry.RequestState[len(parkedState):]
	e.parked.mu.Lock()
	p := e.parked.m[id]
	if p == nil || p.tokenID != cr.TokenID || p.kind != cr.Kind || p.called != cr.Called || p.argsHash != argsHash(cr.CalledArgs) || !p.expiry.Stop() {
		e.parked.mu.Unlock()
		return nil, &refusedError{protocol: true, reason: "the call these answers are for is gone: it was answered already, timed out, or was made with another token, tool or arguments; call again"}
	}
	delete(e.parked.m, id)
	q := p.asked
	p.asked = nil
	e.parked.mu.Unlock()
	q.answer <- cr.Retry.InputResponses
	res, err, asked := e.next(ctx, p)
	if asked {
		return res, nil
	}
	tr, _ := res.(*mcp.CallToolResult)
	e.finish(*p.rec, p.args, p.start, err, tr != nil && tr.IsError)
	return res, err
}

// next waits for what comes first of p: the end of the server's call (its
// result), or the server's next question (input_required, asked true),
// which the agent must answer within the ask timeout: p is parked until
// it does. An agent that gives up (ctx) ends the server's call.
func (e *Endpoint) next(ctx context.Context, p *parkedCall) (res any, err error, asked bool) {
	select {
	case <-p.done:
		if p.err != nil {
			return nil, p.err, false
		}
		return p.res, nil, false
	case q := <-p.questions:
		e.parked.mu.Lock()
		if e.parked.closed {
			e.parked.mu.Unlock()
			p.cancel()
			<-p.done
			return nil, errors.New("Switchboard is shutting down"), false
		}
		p.id = rand.Text() // the answer spends it
		p.asked = q
		e.parked.m[p.id] = p
		p.expiry = time.AfterFunc(e.cfg.AskTimeout, func() { e.expire(p) })
		e.parked.mu.Unlock()
		return inputRequiredOf(p.kind, mcp.MultiRoundTripResult{InputRequests: q.requests, RequestState: parkedState + p.id}), nil, true
	case <-ctx.Done():
		p.cancel()
		<-p.done
		return nil, ctx.Err(), false
	}
}

// inputRequiredOf is the input_required result of a request of kind
// (see parkedCall.kind).
func inputRequiredOf(kind store.ListedKind, mrt mcp.MultiRoundTripResult) any {
	asking := mcp.Result{ResultType: mcp.ResultTypeInputRequired}
	switch kind {
	case store.KindPrompt:
		return &mcp.GetPromptResult{Result: asking, MultiRoundTripResult: mrt}
	case store.KindResource:
		res := &mcp.ReadResourceResult{MultiRoundTripResult: mrt}
		res.Result = asking
		return res
	}
	return &mcp.CallToolResult{Result: asking, MultiRoundTripResult: mrt}
}

// expire ends a parked call whose agent did not answer in time.
func (e *Endpoint) expire(p *parkedCall) {
	e.parked.mu.Lock()
	if e.parked.m[p.id] != p {
		e.parked.mu.Unlock()
		return
	}
	delete(e.parked.m, p.id)
	e.parked.mu.Unlock()
	p.cancel()
	<-p.done
	e.finish(*p.rec, p.args, p.start, errors.New("the agent did not answer what the server asked within "+e.cfg.AskTimeout.String()), false)
}

// closeParked ends every parked call, recorded as such, and waits for
// their server calls; a call that would park from now on ends instead.
func (e *Endpoint) closeParked() {
	e.parked.mu.Lock()
	e.parked.closed = true
	var ended []*parkedCall
	for id, p := range e.parked.m {
		if p.expiry.Stop() { // else its expiry ends it
			ended = append(ended, p)
		}
		p.cancel()
		delete(e.parked.m, id)
	}
	e.parked.mu.Unlock()
	for _, p := range ended {
		<-p.done
		e.finish(*p.rec, p.args, p.start, errors.New("Switchboard shut down while the agent answered what the server asked"), false)
	}
	e.parked.wg.Wait()
}

// ask gives the agent the questions reqs of the server's and waits for
// the answers, until ctx (the server's request, or the call) ends.
func (p *parkedCall) ask(ctx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	p.nMu.Lock()
	p.n += len(reqs)
	n := p.n
	p.nMu.Unlock()
	if n > maxQuestions {
		return nil, fmt.Errorf("the server asked more than %d questions during one call", maxQuestions)
	}
	q := &parkedQuestion{requests: reqs, answer: make(chan mcp.InputResponses, 1)}
	// The question's request, or the call (its agent gone, its expiry),
	// may end first.
	select {
	case p.questions <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.ctx.Done():
		return nil, p.ctx.Err()
	}
	select {
	case r := <-q.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.ctx.Done():
		return nil, p.ctx.Err()
	}
}

// errNotAnswered is a server's question the agent's retry did not answer.
var errNotAnswered = errors.New("the agent's answer did not answer the server's request")

// Input asks the agent what a 2026-07-28 server asked together, under
// the server's keys, and returns the answers to them, each checked to
// be an answer of its question's kind; an answer to anything else is
// dropped.
func (p *parkedCall) Input(ctx context.Context, reqs mcp.InputRequests) (mcp.InputResponses, error) {
	r, err := p.ask(ctx, reqs)
	if err != nil {
		return nil, err
	}
	answers := make(mcp.InputResponses, len(reqs))
	for key, req := range reqs {
		a, ok := r[key]
		if !ok {
			continue // the server asks again, or fails the call
		}
		if err := a.DecodeFor(req.Method); err != nil {
			return nil, fmt.Errorf("the agent's answer %q: %w", key, err)
		}
		answers[key] = a
	}
	return answers, nil
}

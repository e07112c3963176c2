package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// Questions a server asks, relayed to a 2025-era agent, that end before
// the agent answers: the server's request was cancelled, or its call
// ended. The agent is told (notifications/cancelled, with the id mcp-go
// sent the question under), and its answer, should it come anyway, is
// taken quietly (see lateAnswer): nothing waits for it. mcp-go keeps the
// ids of the requests it sends to itself, so each relayed question is
// expected on its session before it is sent, and its id noted as the
// session's stream carries it (see questionWriter).

// relayedQuestion is a relayed question on its way to an agent.
type relayedQuestion struct {
	session, method string
	id              json.RawMessage // once sent; under relayed.mu
	// sent is closed once its id is known or it ended (under
	// relayed.mu): the next question of its method to its session waits
	// for it, so that each id goes to its own question.
	sent   chan struct{}
	closed bool
}

// markSent closes q.sent once (relayed.mu held).
func (q *relayedQuestion) markSent() {
	if !q.closed {
		q.closed = true
		close(q.sent)
	}
}

// relayedQuestions are the relayed questions of every session.
type relayedQuestions struct {
	mu      sync.Mutex
	pending []*relayedQuestion
}

// relayedMethods are the questions a server's request becomes.
var relayedMethods = [][]byte{[]byte(mcp.MethodSamplingCreateMessage), []byte(mcp.MethodElicitationCreate), []byte(mcp.MethodListRoots)}

// expect notes that a question of method is about to go to session, and
// returns what ends it: asked reports whether it ended unanswered because
// the server's request did (err is the relay's error), in which case the
// agent is told it is withdrawn.
func (e *Endpoint) expectRelayed(ctx context.Context, session, method string) (done func(err error)) {
	q := &relayedQuestion{session: session, method: method, sent: make(chan struct{})}
	rq := &e.relayed
	for {
		// An earlier question of the method to the session, not sent
		// yet, goes first: the ids are read off the stream in order.
		rq.mu.Lock()
		i := slices.IndexFunc(rq.pending, func(p *relayedQuestion) bool { return p.session == session && p.method == method && p.id == nil })
		if i < 0 {
			rq.pending = append(rq.pending, q)
			rq.mu.Unlock()
			break
		}
		earlier := rq.pending[i].sent
		rq.mu.Unlock()
		select {
		case <-earlier:
		case <-ctx.Done():
			return func(error) {} // the question is not asked: its send fails at once
		}
	}
	return func(err error) {
		rq.mu.Lock()
		rq.pending = slices.DeleteFunc(rq.pending, func(p *relayedQuestion) bool { return p == q })
		q.markSent()
		id := q.id
		rq.mu.Unlock()
		if err != nil && ctx.Err() != nil && id != nil {
			e.withdraw(session, id)
		}
	}
}

// noteRelayed reads, in what a session's stream carries, the ids of the
// relayed questions expected on it.
func (e *Endpoint) noteRelayed(session string, p []byte) {
	if session == "" || !slices.ContainsFunc(relayedMethods, func(m []byte) bool { return bytes.Contains(p, m) }) {
		return
	}
	for data := range sseData(p) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &msg) != nil || len(msg.ID) == 0 || msg.Params.Meta[approvalMeta] != nil {
			continue // not a request, or Switchboard's own approval question
		}
		rq := &e.relayed
		rq.mu.Lock()
		for _, q := range rq.pending {
			if q.session == session && q.method == msg.Method && q.id == nil {
				q.id = bytes.Clone(msg.ID)
				q.markSent()
				break
			}
		}
		rq.mu.Unlock()
	}
}

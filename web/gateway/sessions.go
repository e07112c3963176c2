package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// mcpSessions is who uses the MCP endpoint. It is the session id manager
// of session-based clients (2025-11-25 and earlier): ids are 192 random
// bits (crypto/rand), a session is valid only while it is live, and a
// terminated id stays known as terminated (mcp-go answers 404 to it), a
// bounded number of them.
//
// A 2026-07-28 client opens no session: each of its requests stands
// alone, naming the client in its _meta (clientInfo, which it should but
// need not send). So such clients are known by that name, as they give
// it: clients that give the same one are one entry, and one that gives
// none is "". The entries are bounded too, and forgotten an hour after
// their last request, as sessions end.
type mcpSessions struct {
	mu         sync.Mutex
	live       map[string]*Session
	terminated map[string]time.Time
	stateless  map[string]*StatelessClient
	// tokens is the use of each connected client's token, by its id
	// (see clientuse.go).
	tokens map[string]*tokenUse
	// ended, if set, is called with each session that ends (terminated
	// by its agent's DELETE, or idle): what it subscribed to ends too.
	ended func(id string)
	// forget, if set, is called with each session its agent ended, or
	// that was idle too long, unless closing: the store forgets it. One
	// ended because the process stops is kept, to be resumed.
	forget  func(id string, idle bool)
	closing bool
	// idling are the sessions being ended for being idle here (see
	// endIdleSessions): they are not marked terminated, so that one in use
	// on another replica comes back from the store if its agent returns.
	idling map[string]bool
}

// Session is an agent's session with the endpoint.
type Session struct {
	ID       string
	Client   string // clientInfo name and version, cut to maxClient
	Started  time.Time
	LastUsed time.Time
	// tokenID is the connected client whose token opened the session
	// ("" for the endpoint's own token); streams counts its open GET
	// streams (see streaming).
	tokenID string
	bound   bool // tokenID is known: the session answers that token only
	streams int
	// asks are what its agent declared it answers (see needs.go).
	asks discovery.Asks
	// view is the hashes of the lists its agent was last told of (see
	// viewChanged).
	view viewHashes
	// rec is the session as the store keeps it (see resume.go); rec.Hash
	// is "" if it is not kept.
	rec store.MCPSession
}

// StatelessClient is a 2026-07-28 client, by the name its requests give.
type StatelessClient struct {
	Client   string
	LastUsed time.Time
	Requests int
	// Listening counts its open subscriptions/listen streams.
	Listening int
}

// maxClient caps the client name kept per session.
const maxClient = 200

// maxTerminated bounds the terminated ids kept.
const maxTerminated = 4096

// maxStateless bounds the stateless clients kept: past it, one is
// forgotten (see forgetFirst).
const maxStateless = 256

var errUnknownSession = errors.New("unknown MCP session")

func newMCPSessions() *mcpSessions {
	return &mcpSessions{live: map[string]*Session{}, terminated: map[string]time.Time{}, stateless: map[string]*StatelessClient{}, tokens: map[string]*tokenUse{}}
}

// randomHex is n random bytes (crypto/rand) in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Generate makes a new session id.
func (m *mcpSessions) Generate() string {
	id := "sb-" + randomHex(24)
	m.add(id, time.Now())
	return id
}

// add makes session id live, started at started.
func (m *mcpSessions) add(id string, started time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live[id] = &Session{ID: id, Started: started, LastUsed: time.Now()}
}

// known reports whether id names a session this process knows, live or
// terminated.
func (m *mcpSessions) known(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, live := m.live[id]
	_, ended := m.terminated[id]
	return live || ended
}

// kept records that session id is kept in the store as rec.
func (m *mcpSessions) kept(id string, rec store.MCPSession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.live[id]; ok {
		s.rec = rec
	}
}

// keepDue says whether session id's last use is to be written to the
// store (more than keepEvery after the last write), and returns the
// record to write, used at now.
func (m *mcpSessions) keepDue(id string, now time.Time) (store.MCPSession, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	if !ok || s.rec.Hash == "" || now.Sub(s.rec.LastUsed) < keepEvery {
		return store.MCPSession{}, false
	}
	s.rec.LastUsed = now
	return s.rec, true
}

// close marks the sessions as ending with the process: the store keeps
// them.
func (m *mcpSessions) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closing = true
}

// Validate implements server.SessionIdManager.
func (m *mcpSessions) Validate(id string) (isTerminated bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[id]; ok {
		return false, nil
	}
	if _, ok := m.terminated[id]; ok {
		return true, nil
	}
	return false, errUnknownSession
}

// Terminate implements server.SessionIdManager.
func (m *mcpSessions) Terminate(id string) (isNotAllowed bool, err error) {
	m.mu.Lock()
	if _, ok := m.live[id]; !ok {
		m.mu.Unlock()
		return false, nil
	}
	delete(m.live, id)
	idle := m.idling[id]
	delete(m.idling, id)
	if !idle {
		if len(m.terminated) >= maxTerminated {
			clear(m.terminated)
		}
		m.terminated[id] = time.Now()
	}
	forget := m.forget != nil && !m.closing
	m.mu.Unlock()
	if m.ended != nil {
		m.ended(id)
	}
	if forget {
		m.forget(id, idle)
	}
	return false, nil
}

// isLive reports whether id names a live session.
func (m *mcpSessions) isLive(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.live[id]
	return ok
}

// touch records a request of session id, and reports whether id names
// a live session.
func (m *mcpSessions) touch(id string) bool {
	if id == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	if ok {
		s.LastUsed = time.Now()
	}
	return ok
}

// idleSince returns the live sessions unused since before, marked as
// ending for being idle (see idling).
func (m *mcpSessions) idleSince(before time.Time) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, s := range m.live {
		if s.LastUsed.Before(before) {
			out = append(out, id)
			if m.idling == nil {
				m.idling = map[string]bool{}
			}
			m.idling[id] = true
		}
	}
	return out
}

// clientName is how a client is named on the dashboard and in the audit:
// its clientInfo as "name version", cut to maxClient bytes; "" if it
// gave none.
func clientName(info *mcp.Implementation) string {
	if info == nil {
		return ""
	}
	return strings.ToValidUTF8(cutString(strings.TrimSpace(info.Name+" "+info.Version), maxClient), "")
}

func (m *mcpSessions) client(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.live[id]; ok {
		return s.Client
	}
	return ""
}

// list returns the live sessions, oldest first.
func (m *mcpSessions) list() []Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedCopies(m.live, func(a, b Session) int { return a.Started.Compare(b.Started) })
}

// sortedCopies returns copies of the values of m, sorted by cmp.
func sortedCopies[T any](m map[string]*T, cmp func(a, b T) int) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	slices.SortFunc(out, cmp)
	return out
}

// seen records a request of a stateless client.
func (m *mcpSessions) seen(client string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.statelessLocked(client).Requests++
}

// listening records a subscriptions/listen stream of a stateless client
// opening; the function returned records it closing.
func (m *mcpSessions) listening(client string) (closed func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.statelessLocked(client)
	c.Requests++
	c.Listening++
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		c.Listening-- // on the entry it opened on, even if forgotten since
		c.LastUsed = time.Now()
	}
}

// anyListener reports whether an agent may hear of a change of the offer:
// a live session, or a stateless client's subscriptions/listen stream.
func (m *mcpSessions) anyListener() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.live) > 0 {
		return true
	}
	for _, c := range m.stateless {
		if c.Listening > 0 {
			return true
		}
	}
	return false
}

// statelessLocked returns the entry of a stateless client, made if new
// (forgetting another if there are too many), with its last use now.
func (m *mcpSessions) statelessLocked(client string) *StatelessClient {
	now := time.Now()
	c, ok := m.stateless[client]
	if !ok {
		if len(m.stateless) >= maxStateless {
			var forget *StatelessClient
			for _, o := range m.stateless {
				if forget == nil || forgetFirst(o, forget) {
					forget = o
				}
			}
			delete(m.stateless, forget.Client)
		}
		c = &StatelessClient{Client: client}
		m.stateless[client] = c
	}
	c.LastUsed = now
	return c
}

// forgetFirst reports whether a is to be forgotten before b: one not
// listening before one listening, then the one unused for longer.
func forgetFirst(a, b *StatelessClient) bool {
	if (a.Listening == 0) != (b.Listening == 0) {
		return a.Listening == 0
	}
	return a.LastUsed.Before(b.LastUsed)
}

// forgetStateless forgets the stateless clients unused since before and
// not listening.
func (m *mcpSessions) forgetStateless(before time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, c := range m.stateless {
		if c.Listening == 0 && c.LastUsed.Before(before) {
			delete(m.stateless, name)
		}
	}
}

// statelessList returns the stateless clients, most recently used first.
func (m *mcpSessions) statelessList() []StatelessClient {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedCopies(m.stateless, func(a, b StatelessClient) int { return b.LastUsed.Compare(a.LastUsed) })
}

// Sessions is the agents' live sessions, oldest first.
func (e *Endpoint) Sessions() []Session { return e.sessions.list() }

// StatelessClients is the 2026-07-28 clients seen in the last hour (or
// listening), most recently used first.
func (e *Endpoint) StatelessClients() []StatelessClient { return e.sessions.statelessList() }

// viewChanged reports whether session id's agent is to hear of a
// list_changed of method, its view's hashes being now (true for a session
// not live: nothing is known of it).
func (m *mcpSessions) viewChanged(id, method string, now viewHashes) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	if !ok {
		return true
	}
	return s.view.changed(method, now)
}

// noteView records the hashes of the view session id started with.
func (m *mcpSessions) noteView(id string, hashes viewHashes) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.live[id]; ok {
		s.view = hashes
	}
}

// ownedBy reports whether a request made with client token tokenID (""
// for the endpoint's own) may use session id: any may use a session not
// yet initialized, or one this endpoint does not know (mcp-go answers
// that); an initialized one answers the token that opened it only, so
// that another token cannot answer its questions or end it (issue 34).
func (m *mcpSessions) ownedBy(id, tokenID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	return !ok || !s.bound || s.tokenID == tokenID
}

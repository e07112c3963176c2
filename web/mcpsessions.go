package web

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"time"
)

// mcpSessions is the MCP endpoint's session id manager: ids are 192
// random bits (crypto/rand), a session is valid only while it is live,
// and a terminated id stays known as terminated (mcp-go answers 404 to
// it), a bounded number of them.
type mcpSessions struct {
	mu         sync.Mutex
	live       map[string]*agentSession
	terminated map[string]time.Time
}

// agentSession is one agent connected to the endpoint.
type agentSession struct {
	ID       string
	Client   string // clientInfo name and version, cut to maxClient
	Started  time.Time
	LastUsed time.Time
}

// maxClient caps the client name kept per session.
const maxClient = 200

// maxTerminated bounds the terminated ids kept.
const maxTerminated = 4096

var errUnknownSession = errors.New("unknown MCP session")

func newMCPSessions() *mcpSessions {
	return &mcpSessions{live: map[string]*agentSession{}, terminated: map[string]time.Time{}}
}

// Generate makes a new session id.
func (m *mcpSessions) Generate() string {
	id := "sb-" + randomHex(24)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	m.live[id] = &agentSession{ID: id, Started: now, LastUsed: now}
	return id
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
	defer m.mu.Unlock()
	if _, ok := m.live[id]; !ok {
		return false, nil
	}
	delete(m.live, id)
	if len(m.terminated) >= maxTerminated {
		clear(m.terminated)
	}
	m.terminated[id] = time.Now()
	return false, nil
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

// idleSince returns the live sessions unused since before.
func (m *mcpSessions) idleSince(before time.Time) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for id, s := range m.live {
		if s.LastUsed.Before(before) {
			out = append(out, id)
		}
	}
	return out
}

func (m *mcpSessions) setClient(id, client string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.live[id]; ok {
		s.Client = strings.ToValidUTF8(cutString(client, maxClient), "")
	}
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
func (m *mcpSessions) list() []agentSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]agentSession, 0, len(m.live))
	for _, s := range m.live {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A 2026-07-28 session's subscriptions change its listen stream's
// filter: subscriptions made and dropped in quick succession open the
// stream again each time, one stream at a time, and never end the
// session (mcp-go's client ends the stream of an earlier Listen when a
// later one starts: two at once would end each other).
func TestSubscriptionsReopenTheListenStream(t *testing.T) {
	up := server.NewMCPServer("upstream", "1.0.0", server.WithToolCapabilities(true), server.WithResourceCapabilities(true, true))
	var mu sync.Mutex
	var filters []string
	s := openWatched(t, up, nil, func(body []byte) {
		if strings.Contains(string(body), `"method":"subscriptions/listen"`) {
			mu.Lock()
			filters = append(filters, string(body))
			mu.Unlock()
		}
	})
	if !mcp.IsModernProtocol(s.protocol) {
		t.Fatalf("protocol %s; want 2026-07-28", s.protocol)
	}
	ctx := t.Context()
	var unsubscribe []func()
	for _, uri := range []string{"test://a", "test://b", "test://c"} {
		u, err := s.Subscribe(ctx, uri, func() {})
		if err != nil {
			t.Fatal(err)
		}
		unsubscribe = append(unsubscribe, u)
	}
	unsubscribe[0]()
	unsubscribe[2]()
	// The last stream listens for b alone; the session lives on.
	deadline := time.Now().Add(time.Minute)
	for {
		// The last listen is the one sent last (the highest id): an
		// earlier one's request may reach the server after it, as the
		// client ends that stream and opens the next at once.
		mu.Lock()
		last, lastID := "", -1
		for _, f := range filters {
			var msg struct{ ID int }
			if json.Unmarshal([]byte(f), &msg) == nil && msg.ID > lastID {
				last, lastID = f, msg.ID
			}
		}
		mu.Unlock()
		if strings.Contains(last, `"resourceSubscriptions":["test://b"]`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listen requests %q; want the last for test://b alone", filters)
		}
		select {
		case <-s.Done():
			t.Fatalf("the session ended: %v", s.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := s.Err(); err != nil {
		t.Errorf("the session ended: %v", err)
	}
}

// A 2025-era server is sent resources/subscribe and resources/unsubscribe
// in the order the first and last subscribers came and went: when one
// agent's subscription ends as another's starts, the server is left
// subscribed (its last word for the URI is a subscribe).
func TestSubscribeAndUnsubscribeReachTheServerInOrder(t *testing.T) {
	up := server.NewMCPServer("upstream", "1.0.0", server.WithResourceCapabilities(true, true))
	var mu sync.Mutex
	var last string // the last of subscribe / unsubscribe the server took
	unsubscribing, subscribing := make(chan struct{}, 1), make(chan struct{}, 1)
	s := openWatched(t, up, []string{mcp.ProtocolVersion20251125}, func(body []byte) {
		var msg struct{ Method string }
		_ = json.Unmarshal(body, &msg)
		switch msg.Method {
		case "resources/unsubscribe":
			// A slow unsubscribe: it is taken after a subscribe sent
			// while it is on its way, if one is (a client that does not
			// wait for its answer before subscribing again).
			unsubscribing <- struct{}{}
			select {
			case <-subscribing:
			case <-time.After(200 * time.Millisecond):
			}
		case "resources/subscribe":
			select {
			case subscribing <- struct{}{}:
			default:
			}
		}
		if msg.Method == "resources/subscribe" || msg.Method == "resources/unsubscribe" {
			mu.Lock()
			last = msg.Method
			mu.Unlock()
		}
	})
	ctx := t.Context()
	first, err := s.Subscribe(ctx, "test://r", func() {})
	if err != nil {
		t.Fatal(err)
	}
	<-subscribing // the first subscribe's own
	ended := make(chan struct{})
	go func() { defer close(ended); first() }()
	<-unsubscribing // on its way
	second, err := s.Subscribe(ctx, "test://r", func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer second()
	<-ended
	mu.Lock()
	got := last
	mu.Unlock()
	if got != "resources/subscribe" {
		t.Errorf("with one subscriber left, the server's last request for the resource was %s; want resources/subscribe", got)
	}
}

// openWatched opens a session to up, served over Streamable HTTP in
// versions (nil: all mcp-go speaks), each request's body seen by saw
// before the server takes it.
func openWatched(t *testing.T, up *server.MCPServer, versions []string, saw func(body []byte)) *Session {
	t.Helper()
	var opts []server.StreamableHTTPOption
	if versions != nil {
		opts = append(opts, server.WithStreamableHTTPProtocolVersions(versions...))
	}
	h := server.NewStreamableHTTPServer(up, opts...)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		saw(body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	s, err := NewVerifier(Limits{}, nil).Open(context.Background(), Target{Transport: TransportHTTP, URL: ts.URL + "/mcp"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

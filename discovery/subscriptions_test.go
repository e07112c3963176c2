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
	h := server.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"method":"subscriptions/listen"`) {
			mu.Lock()
			filters = append(filters, string(body))
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	s, err := NewVerifier(Limits{}, nil).Open(context.Background(), Target{Transport: TransportHTTP, URL: ts.URL + "/mcp"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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

package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/web/gateway"
)

// Agents' subscriptions to a resource are relayed: Switchboard
// subscribes on the server once however many agents subscribe, each
// agent hears the server's updates under the URI it subscribed with (as
// offered, or the server's own), and the last unsubscribe (here, the end
// of the last subscribed session) ends the subscription on the server.
func TestResourceSubscriptionsAreRelayed(t *testing.T) {
	// Up to 2025-11-25 a server is sent resources/subscribe and
	// resources/unsubscribe; at 2026-07-28 the URIs are the filter of a
	// subscriptions/listen stream.
	for _, era := range []struct {
		name       string
		versions   []string
		subscribed func(body string) bool
	}{
		{"2025-11-25 server", []string{mcp.ProtocolVersion20251125}, func(b string) bool { return strings.Contains(b, `"method":"resources/subscribe"`) }},
		{"2026-07-28 server", nil, func(b string) bool {
			return strings.Contains(b, `"method":"subscriptions/listen"`) && strings.Contains(b, `"resourceSubscriptions":["test://weather"]`)
		}},
	} {
		t.Run(era.name, func(t *testing.T) { testResourceSubscriptions(t, era.versions, era.subscribed) })
	}
}

// subsServer is an upstream server of one resource, test://weather,
// that takes subscriptions, heard as they reach it.
type subsServer struct {
	*server.MCPServer
	url                      string
	subscribes, unsubscribes atomic.Int32
	subscribed, unsubscribed chan struct{}
}

// newSubsServer serves a subsServer speaking versions (nil: all mcp-go
// speaks); subscribedBy tells a subscription's request body.
func newSubsServer(t *testing.T, versions []string, subscribedBy func(body string) bool) *subsServer {
	up := &subsServer{MCPServer: server.NewMCPServer("upstream", "1.0.0", server.WithResourceCapabilities(true, true)),
		subscribed: make(chan struct{}, 8), unsubscribed: make(chan struct{}, 8)}
	up.AddResource(mcp.NewResource("test://weather", "weather", mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "sunny"}}, nil
		})
	var opts []server.StreamableHTTPOption
	if versions != nil {
		opts = append(opts, server.WithStreamableHTTPProtocolVersions(versions...))
	}
	h := server.NewStreamableHTTPServer(up.MCPServer, opts...)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case subscribedBy(string(body)):
			up.subscribes.Add(1)
			up.subscribed <- struct{}{}
		case strings.Contains(string(body), `"method":"resources/unsubscribe"`):
			up.unsubscribes.Add(1)
			up.unsubscribed <- struct{}{}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	up.url = ts.URL + "/mcp"
	return up
}

func testResourceSubscriptions(t *testing.T, versions []string, subscribedBy func(body string) bool) {
	up := newSubsServer(t, versions, subscribedBy)
	subscribed, unsubscribed := up.subscribed, up.unsubscribed
	e := newEnv(t)
	e.createServer(map[string]any{"id": "subs", "name": "Subs", "transport": "http", "url": up.url, "default_policy": "allow"})
	if status := e.verify("subs"); status != "success" {
		t.Fatalf("verify = %s", status)
	}
	const offered, own = "switchboard://subs/test://weather", "test://weather"
	heard := func(c *mcptest.Client) chan string {
		ch := make(chan string, 8)
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationResourceUpdated) {
				uri, _ := n.Params.AdditionalFields["uri"].(string)
				ch <- uri
			}
		})
		return ch
	}
	ada := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "ada", Version: "1"})
	bob := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "bob", Version: "1"})
	adaHeard, bobHeard := heard(ada), heard(bob)
	ctx := t.Context()
	//lint:ignore SA1019 subscriptions are of the 2025-era sessions these agents have
	if err := ada.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: offered}}); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 as above
	if err := bob.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: own}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-subscribed:
	case <-time.After(time.Minute):
		t.Fatal("the server was never subscribed to the resource")
	}
	if n := up.subscribes.Load(); n != 1 {
		t.Errorf("the server was subscribed %d times for two agents' subscriptions; want once", n)
	}
	if versions == nil {
		// mcp-go's server (v1.2.1) takes a 2026-07-28 subscription on
		// the listen stream but has no way to send its updates there (it
		// drops a resources/updated as outside the stream's filter): that
		// the subscription reached the server is what can be seen.
		return
	}
	want := map[string]string{"ada": offered, "bob": own}
	got := map[string]string{}
	deadline := time.After(time.Minute)
	up.SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": own})
	for len(got) < 2 {
		select {
		case uri := <-adaHeard:
			got["ada"] = uri
		case uri := <-bobHeard:
			got["bob"] = uri
		case <-deadline:
			t.Fatalf("heard %v of the resource's update within a minute; want both agents", got)
		}
	}
	for name, uri := range got {
		if uri != want[name] {
			t.Errorf("%s heard the update under %q; want %q, as it subscribed", name, uri, want[name])
		}
	}
	//lint:ignore SA1019 as above
	if err := ada.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: offered}}); err != nil {
		t.Fatal(err)
	}
	if n := up.unsubscribes.Load(); n != 0 {
		t.Errorf("the server was unsubscribed while bob still subscribes")
	}
	// Bob's session ends (his client's DELETE; mcp-go's client sends its
	// DELETE without the token) without unsubscribing: the last
	// subscriber is gone.
	del, _ := http.NewRequest(http.MethodDelete, e.base+"/mcp", nil)
	del.Header.Set("Authorization", "Bearer "+testMCPToken)
	del.Header.Set("Mcp-Session-Id", bob.GetSessionId())
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if versions != nil { // 2025-11-25: the last unsubscribe reaches the server
		select {
		case <-unsubscribed:
		case <-time.After(time.Minute):
			t.Fatal("the last unsubscribe never reached the server")
		}
	}
	// Unknown resources are refused, with their URI.
	//lint:ignore SA1019 as above
	if err := ada.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "switchboard://subs/test://nothing"}}); err == nil {
		t.Error("a subscription to a resource nobody offers was accepted")
	}
}

// Subscriptions hold at most half of the pool's sessions, so calls to
// other servers always find room: with two sessions at once, a second
// server's resource is refused a subscription, and a call to it still
// goes through.
func TestSubscriptionsLeaveRoomForCalls(t *testing.T) {
	// The servers first: their cleanup, last, finds the endpoint (and the
	// subscription it holds open) closed.
	urls := map[string]string{}
	for _, id := range []string{"one", "two"} {
		up := server.NewMCPServer(id, "1.0.0", server.WithResourceCapabilities(true, true), server.WithToolCapabilities(false))
		up.AddResource(mcp.NewResource("test://r", "r"), func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: id}}, nil
		})
		up.AddTool(mcp.NewTool("ping"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("pong from " + id), nil
		})
		ts := httptest.NewServer(server.NewStreamableHTTPServer(up, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125)))
		t.Cleanup(ts.Close)
		urls[id] = ts.URL + "/mcp"
	}
	e := newEnv(t, func(c *gateway.Config) { c.Pool = discovery.PoolConfig{MaxRunning: 2} })
	for _, id := range []string{"one", "two"} {
		e.createServer(map[string]any{"id": id, "name": id, "transport": "http", "url": urls[id], "default_policy": "allow"})
		if status := e.verify(id); status != "success" {
			t.Fatalf("verify %s = %s", id, status)
		}
		e.setPolicy(id, "ping", "allow")
	}
	c := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20251125, mcp.Implementation{Name: "subscriber", Version: "1"})
	ctx := t.Context()
	//lint:ignore SA1019 subscriptions are of the 2025-era session this agent has
	if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "switchboard://one/test://r"}}); err != nil {
		t.Fatal(err)
	}
	//lint:ignore SA1019 as above
	err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "switchboard://two/test://r"}})
	if err == nil || !strings.Contains(err.Error(), "subscriptions on 1 servers") {
		t.Errorf("a subscription on a second server = %v; want refused, naming the limit", err)
	}
	if res, err := c.Call("two__ping", nil); err != nil || mcptest.Text(res) != "pong from two" {
		t.Errorf("a call to the other server = %q, %v; want it through", mcptest.Text(res), err)
	}
}

// A 2026-07-28 agent names the resources it wants to hear of in its
// subscriptions/listen filter: each is subscribed to on its server while
// the stream lasts, the server's updates arrive on the stream under the
// URI the agent named, the stream's end unsubscribes on the server, and
// a listen naming a resource nobody offers is refused, with its URI.
func TestA2026AgentListensToResources(t *testing.T) {
	up := newSubsServer(t, []string{mcp.ProtocolVersion20251125}, func(b string) bool { return strings.Contains(b, `"method":"resources/subscribe"`) })
	subscribed, unsubscribed := up.subscribed, up.unsubscribed
	e := newEnv(t)
	e.createServer(map[string]any{"id": "subs", "name": "Subs", "transport": "http", "url": up.url, "default_policy": "allow"})
	if status := e.verify("subs"); status != "success" {
		t.Fatalf("verify = %s", status)
	}
	const offered = "switchboard://subs/test://weather"
	c := mcptest.ConnectAs(t, e.base, testMCPToken, mcp.ProtocolVersion20260728, mcp.Implementation{Name: "cy", Version: "1"})
	heard := make(chan mcp.JSONRPCNotification, 8)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			heard <- n
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	listened := make(chan error, 1)
	go func() { listened <- c.Listen(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{offered}}) }()
	select {
	case <-subscribed:
	case err := <-listened:
		t.Fatalf("the listen ended before the server was subscribed to: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the server was never subscribed to the resource")
	}
	waitFor(t, time.Minute, "the listen stream acknowledged", func() bool { return c.Acknowledged.Load() > 0 })
	up.SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": "test://weather"})
	select {
	case n := <-heard:
		if uri, _ := n.Params.AdditionalFields["uri"].(string); uri != offered {
			t.Errorf("the agent heard the update of %q; want %q, as it named the resource", uri, offered)
		}
		if n.Params.Meta[mcp.MetaKeySubscriptionID] == nil {
			t.Errorf("the update = %+v; want it tagged with the listen's subscription id", n.Params)
		}
	case <-time.After(time.Minute):
		t.Fatal("the agent never heard of the resource's update")
	}
	cancel() // the stream ends
	select {
	case <-unsubscribed:
	case <-time.After(time.Minute):
		t.Fatal("the end of the listen stream never unsubscribed on the server")
	}
	<-listened

	err := c.Listen(t.Context(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{"switchboard://subs/test://nothing"}})
	if err == nil || !strings.Contains(err.Error(), "test://nothing") {
		t.Errorf("a listen to a resource nobody offers = %v; want it refused, naming it", err)
	}
}

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

	"github.com/switchboard-dev/switchboard/internal/mcptest"
)

// Agents' subscriptions to a resource are relayed: Switchboard
// subscribes on the server once however many agents subscribe, each
// agent hears the server's updates under the URI it subscribed with (as
// offered, or the server's own), and the last unsubscribe ends the
// subscription on the server.
func TestResourceSubscriptionsAreRelayed(t *testing.T) {
	up := server.NewMCPServer("upstream", "1.0.0", server.WithResourceCapabilities(true, true))
	up.AddResource(mcp.NewResource("test://weather", "weather", mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "sunny"}}, nil
		})
	// Subscriptions are of MCP 2025-11-25 and earlier.
	h := server.NewStreamableHTTPServer(up, server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125))
	var subscribes, unsubscribes atomic.Int32
	unsubscribed := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(body), `"method":"resources/subscribe"`):
			subscribes.Add(1)
		case strings.Contains(string(body), `"method":"resources/unsubscribe"`):
			unsubscribes.Add(1)
			unsubscribed <- struct{}{}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	e := newEnv(t)
	e.createServer(map[string]any{"id": "subs", "name": "Subs", "transport": "http", "url": ts.URL + "/mcp", "default_policy": "allow"})
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
	if n := subscribes.Load(); n != 1 {
		t.Errorf("the server got %d resources/subscribe for two agents' subscriptions; want 1", n)
	}
	up.SendNotificationToAllClients(string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": own})
	for name, want := range map[string]struct {
		ch  chan string
		uri string
	}{"ada": {adaHeard, offered}, "bob": {bobHeard, own}} {
		select {
		case uri := <-want.ch:
			if uri != want.uri {
				t.Errorf("%s heard the update under %q; want %q, as it subscribed", name, uri, want.uri)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s never heard the resource's update", name)
		}
	}
	//lint:ignore SA1019 as above
	if err := ada.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: offered}}); err != nil {
		t.Fatal(err)
	}
	if n := unsubscribes.Load(); n != 0 {
		t.Errorf("the server got resources/unsubscribe while bob still subscribes")
	}
	//lint:ignore SA1019 as above
	if err := bob.Unsubscribe(ctx, mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: own}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-unsubscribed:
	case <-time.After(time.Minute):
		t.Fatal("the last unsubscribe never reached the server")
	}
	// Unknown resources are refused, with their URI.
	//lint:ignore SA1019 as above
	if err := ada.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: "switchboard://subs/test://nothing"}}); err == nil {
		t.Error("a subscription to a resource nobody offers was accepted")
	}
}

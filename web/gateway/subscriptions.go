package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
)

// Resource subscriptions, relayed. A 2025-era agent's resources/subscribe
// of an offered resource (named as offered, or by the server's own URI
// when only one server of its view has it) subscribes Switchboard to the
// resource on its server, once however many agents subscribe to it; the
// server's notifications/resources/updated reach each subscribed session
// under the URI it subscribed with; the last unsubscribe (or the end of
// the last subscribed session) unsubscribes upstream. A subscription
// holds its server's pooled session open (see discovery.Pool.Use): it
// counts as a call in flight, so it is neither idled out nor evicted.
// When the server's session ends (the server exited, was disabled or
// changed), its subscriptions end with it; an agent subscribes again
// once it reads the resource again. A subscription reads nothing: what
// the resource holds is read with resources/read, under its policy.

// upstreamSub is the subscription to one resource on its server, and
// the agents' sessions subscribed to it, with the URI each named it by.
type upstreamSub struct {
	sessions map[string]string
	stop     context.CancelFunc
	ended    chan struct{}
}

// subscriptions are the endpoint's relayed subscriptions, by server id
// and the resource's URI there.
type subscriptions struct {
	mu   sync.Mutex
	byUp map[[2]string]*upstreamSub
}

// maxSubscriptions bounds the resources subscribed to upstream at once:
// each holds a pooled session open.
const maxSubscriptions = 64

// answerSubscribe answers a session's resources/subscribe or
// resources/unsubscribe.
func (e *Endpoint) answerSubscribe(w http.ResponseWriter, r *http.Request, req rpcRequest, from agent) error {
	if from.modern || from.session == "" {
		return writeRPCError(w, r, from.modern, req.ID, rpcError{Code: mcp.METHOD_NOT_FOUND,
			Message: "resources/subscribe is of sessions (MCP 2025-11-25 and earlier); at 2026-07-28 the resources to hear of are the resourceSubscriptions of a subscriptions/listen"})
	}
	uri := req.Params.URI
	if uri == "" {
		return writeRPCError(w, r, false, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: "uri is required"})
	}
	o, err := e.current()
	if err != nil {
		return err
	}
	ol, upstream, err := o.view(profileOf(r.Context())).listing.resource(uri)
	var missing *notOffered
	switch {
	case errors.As(err, &missing):
		return writeRPCError(w, r, false, req.ID, rpcError{Code: mcp.INVALID_PARAMS, Message: missing.message, Data: map[string]string{"uri": uri}})
	case err != nil:
		return writeRPCError(w, r, false, req.ID, rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
	}
	key := [2]string{ol.ref.ServerID, upstream}
	if req.Method == string(mcp.MethodResourcesUnsubscribe) {
		e.unsubscribe(key, from.session)
		return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{}})
	}
	if err := e.subscribe(r.Context(), key, from.session, uri); err != nil {
		return writeRPCError(w, r, false, req.ID, rpcError{Code: mcp.INTERNAL_ERROR, Message: err.Error()})
	}
	if !e.sessions.isLive(from.session) { // it ended while this waited
		e.unsubscribe(key, from.session)
	}
	return writeJSON(w, r, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{}})
}

// subscribe adds session to the subscription of key, subscribing
// upstream first if it is the first, and waiting for the server's answer.
func (e *Endpoint) subscribe(ctx context.Context, key [2]string, session, uri string) error {
	e.subs.mu.Lock()
	if e.subs.byUp == nil {
		e.subs.byUp = map[[2]string]*upstreamSub{}
	}
	if up, ok := e.subs.byUp[key]; ok {
		up.sessions[session] = uri
		e.subs.mu.Unlock()
		return nil
	}
	if len(e.subs.byUp) >= maxSubscriptions {
		e.subs.mu.Unlock()
		return errors.New("Switchboard holds as many subscriptions as it takes: unsubscribe from a resource first")
	}
	// Each server subscribed to holds a session of the pool open: half
	// of them at most, so that calls to other servers always find room.
	servers := map[string]bool{key[0]: true}
	for k := range e.subs.byUp {
		servers[k[0]] = true
	}
	if limit := max(1, e.pool.Config().MaxRunning/2); len(servers) > limit {
		e.subs.mu.Unlock()
		return fmt.Errorf("Switchboard holds subscriptions on %d servers, as many as it takes (half of the servers it runs at once): unsubscribe from another server's resource first", limit)
	}
	sctx, stop := context.WithCancel(context.Background())
	up := &upstreamSub{sessions: map[string]string{session: uri}, stop: stop, ended: make(chan struct{})}
	e.subs.byUp[key] = up
	e.subs.mu.Unlock()

	subscribed := make(chan error, 1)
	go func() {
		defer close(up.ended)
		defer e.endSubscription(key, up)
		err := e.holdSubscription(sctx, key, up, subscribed)
		select {
		case subscribed <- err: // it failed before it was made
		default:
		}
	}()
	select {
	case err := <-subscribed:
		return err
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// holdSubscription subscribes to key's resource on its server's pooled
// session and holds it until sctx ends (the last unsubscribe, the
// endpoint's close) or the session does. subscribed hears nil once the
// server accepted the subscription.
func (e *Endpoint) holdSubscription(sctx context.Context, key [2]string, up *upstreamSub, subscribed chan<- error) error {
	sum, err := e.st.Summary(sctx, key[0])
	if err != nil {
		return err
	}
	srv := sum.Server
	ctx, cancel := context.WithCancel(sctx)
	defer cancel()
	go func() { // the endpoint's close ends it too
		select {
		case <-e.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err = e.pool.Use(ctx, srv.ID, srv.ConfigHash(), e.deps.Target(srv), time.Duration(srv.TimeoutMS)*time.Millisecond, func(s *discovery.Session) error {
		rctx, rcancel := context.WithTimeout(ctx, e.cfg.CallTimeout)
		unsubscribe, err := s.Subscribe(rctx, key[1], func() { e.resourceUpdated(key, up) })
		rcancel()
		if err != nil {
			return err
		}
		defer unsubscribe()
		subscribed <- nil
		select {
		case <-ctx.Done():
		case <-s.Done():
		}
		return nil
	})
	return err
}

// resourceUpdated tells each session subscribed to key that the resource
// was updated, under the URI it subscribed with, and forgets the
// sessions that ended.
func (e *Endpoint) resourceUpdated(key [2]string, up *upstreamSub) {
	e.subs.mu.Lock()
	to := make(map[string]string, len(up.sessions))
	for s, uri := range up.sessions {
		to[s] = uri
	}
	e.subs.mu.Unlock()
	for session, uri := range to {
		if strings.HasPrefix(session, listenPrefix) {
			e.notifyListener(session, uri)
			continue
		}
		if !e.sessions.isLive(session) {
			e.unsubscribe(key, session)
			continue
		}
		if err := e.srv.SendNotificationToSpecificClient(session, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}); err != nil {
			e.log.Debug("relay a resource update", "session", session, "err", err)
		}
	}
}

// unsubscribe takes session off key's subscription, ending it upstream
// when it was the last.
func (e *Endpoint) unsubscribe(key [2]string, session string) {
	e.subs.mu.Lock()
	defer e.subs.mu.Unlock()
	up, ok := e.subs.byUp[key]
	if !ok {
		return
	}
	delete(up.sessions, session)
	if len(up.sessions) == 0 {
		delete(e.subs.byUp, key)
		up.stop()
	}
}

// unsubscribeAll takes session off every subscription (it ended).
func (e *Endpoint) unsubscribeAll(session string) {
	e.subs.mu.Lock()
	var keys [][2]string
	for key, up := range e.subs.byUp {
		if _, ok := up.sessions[session]; ok {
			keys = append(keys, key)
		}
	}
	e.subs.mu.Unlock()
	for _, key := range keys {
		e.unsubscribe(key, session)
	}
}

// endSubscription forgets up once it ended (its session did, or it was
// stopped).
func (e *Endpoint) endSubscription(key [2]string, up *upstreamSub) {
	e.subs.mu.Lock()
	defer e.subs.mu.Unlock()
	if e.subs.byUp[key] == up {
		delete(e.subs.byUp, key)
	}
	up.stop()
}

// closeSubscriptions ends every subscription and waits for them.
func (e *Endpoint) closeSubscriptions() {
	e.subs.mu.Lock()
	ups := make([]*upstreamSub, 0, len(e.subs.byUp))
	for _, up := range e.subs.byUp {
		ups = append(ups, up)
		up.stop()
	}
	e.subs.mu.Unlock()
	for _, up := range ups {
		<-up.ended
	}
}

// A 2026-07-28 agent names the resources it wants to hear of in the
// filter of a subscriptions/listen (resourceSubscriptions, by their
// offered URIs or, when only one server of its view has it, the
// server's own). Each is subscribed to on its server as a session's
// resources/subscribe is, for as long as the stream lasts, under a key
// of the stream's own (listenPrefix…); the server's updates are sent on
// the stream, under the URI the agent named. A URI not offered, or one
// more than Switchboard can hold, fails the listen request before the
// stream opens.

// listenPrefix starts the key a listen stream's subscriptions are held
// under, in place of a session's id.
const listenPrefix = "listen:"

// listenKey is the context key of a listen stream's key (see bindListen).
type listenKey struct{}

// listenResources subscribes the resources req (a subscriptions/listen)
// names, and returns r with the stream's key in its context and stop,
// which ends the subscriptions once the stream ended. A resource it
// cannot subscribe to is answered with the error (stop is nil).
func (e *Endpoint) listenResources(w http.ResponseWriter, r *http.Request, req rpcRequest) (_ *http.Request, stop func(), err error) {
	var params struct {
		Notifications struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	_ = json.Unmarshal(req.RawParams, &params) // mcp-go answers a malformed one
	uris := params.Notifications.ResourceSubscriptions
	if len(uris) == 0 {
		return r, func() {}, nil
	}
	fail := func(code int, message string, data any) (*http.Request, func(), error) {
		return r, nil, writeRPCError(w, r, true, req.ID, rpcError{Code: code, Message: message, Data: data})
	}
	if len(uris) > maxSubscriptions {
		return fail(mcp.INVALID_PARAMS, fmt.Sprintf("a listen names %d resources; Switchboard holds %d subscriptions at most", len(uris), maxSubscriptions), nil)
	}
	o, err := e.current()
	if err != nil {
		return r, nil, err
	}
	listing := o.view(profileOf(r.Context())).listing
	key := listenPrefix + rand.Text()
	stop = func() {
		e.listeners.Delete(key)
		e.unsubscribeAll(key)
	}
	for _, uri := range uris {
		ol, upstream, err := listing.resource(uri)
		var missing *notOffered
		switch {
		case errors.As(err, &missing):
			stop()
			return fail(mcp.INVALID_PARAMS, missing.message, map[string]string{"uri": uri})
		case err != nil:
			stop()
			return r, nil, err
		}
		if err := e.subscribe(r.Context(), [2]string{ol.ref.ServerID, upstream}, key, uri); err != nil {
			stop()
			return fail(mcp.INTERNAL_ERROR, err.Error(), map[string]string{"uri": uri})
		}
	}
	return r.WithContext(context.WithValue(r.Context(), listenKey{}, key)), stop, nil
}

// bindListen is mcp-go's hook before it serves a subscriptions/listen:
// the stream's subscriptions (see listenResources) are sent on its
// session, which mcp-go makes for the stream alone.
func (e *Endpoint) bindListen(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest) {
	key, _ := ctx.Value(listenKey{}).(string)
	if cs := server.ClientSessionFromContext(ctx); key != "" && cs != nil {
		e.listeners.Store(key, cs)
	}
}

// notifyListener sends a resource's update on the listen stream of key
// (mcp-go tags it with the stream's subscription id); one not bound yet,
// or ended, hears nothing.
func (e *Endpoint) notifyListener(key, uri string) {
	v, ok := e.listeners.Load(key)
	if !ok {
		return
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationResourceUpdated), Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}}}}
	select {
	case v.(server.ClientSession).NotificationChannel() <- n:
	default:
		e.log.Debug("relay a resource update: the listen stream is full", "uri", uri)
	}
}

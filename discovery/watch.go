package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Kinds of WatchEvent.
const (
	// WatchConnected: the session is (re)established; the event carries
	// what the server says it is.
	WatchConnected = "connected"
	// WatchToolsChanged: the server sent notifications/tools/list_changed.
	WatchToolsChanged = "tools_changed"
)

// PhaseWatching is the phase of a held session once it is established.
const PhaseWatching = "watching"

// Watch defaults.
const (
	// DefaultWatchPing is how often a held session is pinged; a ping not
	// answered within the init timeout ends the watch.
	DefaultWatchPing = 30 * time.Second
	// WatchCoalesce is the least time between two WatchToolsChanged
	// events: more notifications in between make one event, at its end.
	WatchCoalesce = time.Second
	// WatchBytes bounds what one held session may receive in all (it
	// replaces Limits.TotalBytes, which bounds one verification). A
	// healthy session receives little (pings, a notification now and
	// then); one that exceeds this ends with too_large, and its caller
	// decides when to try again.
	WatchBytes = 64 << 20
)

// WatchEvent is something a watched server did.
type WatchEvent struct {
	Kind string
	// ServerName and ServerVersion are its serverInfo (WatchConnected),
	// capped like a verification's.
	ServerName    string
	ServerVersion string
	// ListChanged says the server declared tools.listChanged
	// (WatchConnected).
	ListChanged bool
}

// Watch holds a session to the server t describes: it connects as a
// verification does (the same sandbox, transports and per-message limit),
// runs the handshake, reports WatchConnected, then reports every
// notifications/tools/list_changed as WatchToolsChanged (at most one per
// WatchCoalesce) and pings the server every ping (DefaultWatchPing if
// zero). It returns nil when ctx ends, and an *Error when the session
// ends otherwise: the process exited, the connection or the notification
// stream was lost, a ping went unanswered, WatchBytes were exceeded. Like
// Verify, it returns only once any process it started is gone with its
// whole group. on is called from Watch's goroutine, never concurrently.
func (v *Verifier) Watch(ctx context.Context, t Target, initTimeout, ping time.Duration, on func(WatchEvent)) error {
	limits := v.limits
	if initTimeout > 0 {
		limits.InitTimeout = initTimeout
	}
	limits.TotalBytes = WatchBytes
	if ping <= 0 {
		ping = DefaultWatchPing
	}
	run := &verification{v: v, limits: limits, target: t, start: time.Now(), rec: &recorder{}, listen: true}
	err := run.watch(ctx, ping, on)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	var tooLarge errTooLarge
	if run.tally != nil && run.tally.overflow.Load() && !errors.As(err, &tooLarge) {
		err = errTooLarge{fmt.Sprintf("server sent more than %d bytes in one held session", WatchBytes)}
	}
	exited, code := run.exited()
	e := classify(err, run.phase, ctx, exited, code)
	e.StderrTail = run.stderr()
	e.Message = displayable(redact(e.Message, t.secrets()))
	return e
}

func (r *verification) watch(ctx context.Context, ping time.Duration, on func(WatchEvent)) (err error) {
	ctx, cutShort := context.WithCancel(ctx)
	defer cutShort()
	r.cutShort = cutShort
	r.enter(PhaseStarting, 0)
	initCtx, cancelInit := context.WithTimeout(ctx, r.limits.InitTimeout)
	defer cancelInit()

	changed := make(chan struct{}, 1)
	lost := make(chan error, 1)
	note := func(ch chan error, err error) {
		select {
		case ch <- err:
		default:
		}
	}
	watching := make(chan struct{}) // closed once the session is up
	r.streamEnded = func() {
		select {
		case <-watching: // a stream that ends during the handshake is mcp-go's to retry
			note(lost, newError(ClassNetwork, PhaseWatching, "the server's event stream ended (did it restart?)", nil))
		default:
		}
	}
	tr, cleanup, err := r.connect(initCtx)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup // the notification stream's goroutine
	defer func() {
		if err != nil {
			r.exited() // before cleanup stops the child
		}
		cutShort()
		cleanup()
		wg.Wait()
	}()

	c := client.NewClient(tr, client.WithDiscoverTimeout(r.limits.DiscoverTimeout))
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			select {
			case changed <- struct{}{}:
			default: // one pending is as good as many
			}
		}
	})
	c.OnConnectionLost(func(err error) { note(lost, fmt.Errorf("connection lost: %w", err)) })
	connCtx, cancelConn := context.WithCancel(ctx)
	defer cancelConn()
	stopInitBound := context.AfterFunc(initCtx, cancelConn)
	err = c.Start(connCtx)
	stopInitBound()
	if err != nil {
		if initErr := initCtx.Err(); initErr != nil {
			return fmt.Errorf("%w: %v", initErr, err)
		}
		return err
	}
	r.enter(PhaseInitializing, 0)
	initRes, err := c.Initialize(initCtx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "switchboard", Version: "1"},
	}})
	if err != nil {
		return err
	}
	cancelInit()
	r.enter(PhaseWatching, 0)
	close(watching)
	if initRes.ProtocolVersion >= mcp.ProtocolVersion20260728 && r.target.Transport != TransportSSE {
		// Since 2026-07-28 a client opts in to notifications on a
		// stream of their own; it lasts as long as the session. Over
		// legacy SSE they arrive on the event stream without it (and
		// mcp-go's SSE server would hold the request past the session).
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true})
			if ctx.Err() == nil {
				note(lost, fmt.Errorf("the notification stream ended: %v", err))
			}
		}()
	}
	var res Result
	ev := WatchEvent{Kind: WatchConnected, ListChanged: initRes.Capabilities.Tools != nil && initRes.Capabilities.Tools.ListChanged}
	ev.ServerName = capText(&res, "name", initRes.ServerInfo.Name, r.limits.ServerInfoBytes)
	ev.ServerVersion = capText(&res, "version", initRes.ServerInfo.Version, r.limits.ServerInfoBytes)
	on(ev)

	var exited <-chan struct{} // a stdio server's output ended
	if r.stdio != nil {
		exited = r.stdio.readDone
	}
	pinger := time.NewTicker(ping)
	defer pinger.Stop()
	var last time.Time        // the last WatchToolsChanged
	var held <-chan time.Time // a notification waiting for WatchCoalesce
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-lost:
			return err
		case <-exited:
			if r.stdio.readErr != nil {
				return fmt.Errorf("the server stopped: %w", r.stdio.readErr)
			}
			return errors.New("the server closed its output")
		case <-changed:
			if wait := WatchCoalesce - time.Since(last); wait > 0 {
				if held == nil {
					held = time.After(wait)
				}
				continue
			}
			last = time.Now()
			on(WatchEvent{Kind: WatchToolsChanged})
		case <-held:
			held, last = nil, time.Now()
			on(WatchEvent{Kind: WatchToolsChanged})
		case <-pinger.C:
			pctx, cancel := context.WithTimeout(ctx, r.limits.InitTimeout)
			err := c.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("the server did not answer a ping: %w", err)
			}
		}
	}
}

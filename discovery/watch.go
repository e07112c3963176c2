package discovery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Kinds of WatchEvent.
const (
	// WatchConnected: the session is established; the event carries what
	// the server says it is. On a 2026-07-28 connection, which has no
	// handshake to repeat, it comes again whenever a ping finds the server
	// saying something else (a new version behind the same URL or
	// command).
	WatchConnected = "connected"
	// WatchToolsChanged: the server sent notifications/tools/list_changed,
	// or the list_changed of its resources or prompts (a verification
	// walks them all).
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
	// WatchWindow is the window of a held session's byte budget: in each,
	// the server may send Limits.TotalBytes, what one verification may
	// receive in all. A verification lasts a minute at most by default
	// (InitTimeout + ListTimeout), so a session may receive in every
	// minute what a verification does in its life, however long it is
	// held. A healthy one uses a sliver of it (answers to pings, a
	// notification now and then); one that sends more, such as a flood
	// of notifications, ends the watch with too_large. Memory stays
	// bounded by the message cap (Limits.MessageBytes), which holds as in
	// a verification, on every transport.
	WatchWindow = time.Minute
)

// WatchEvent is something a watched server did.
type WatchEvent struct {
	Kind string // WatchConnected or WatchToolsChanged
	// ServerName and ServerVersion are its serverInfo (WatchConnected),
	// capped like a verification's.
	ServerName    string
	ServerVersion string
	// ListChanged says the server declared listChanged for its tools,
	// resources or prompts (WatchConnected).
	ListChanged bool
}

// Watch holds a session to the server t describes: it connects as a
// verification does (the same sandbox, transports and limits, but the
// byte budget is per WatchWindow), runs the handshake within initTimeout
// (the Verifier's if zero), reports WatchConnected, then reports each
// notifications/tools/list_changed (or resources', or prompts') as
// WatchToolsChanged, at most one per
// WatchCoalesce, and pings the server every ping (DefaultWatchPing if
// zero; on a 2026-07-28 connection, where mcp-go's ping sends nothing, a
// ping is server/discover). Notifications come over stdout (stdio), the
// GET stream (Streamable HTTP before 2026-07-28), a subscriptions/listen
// stream (2026-07-28, not SSE), or the event stream (legacy SSE).
// Requests the server sends are refused, as during a verification.
//
// Watch returns nil when ctx ends, and an *Error when the session ends
// otherwise: the process exited or closed stdout (exited, with the
// stderr tail), the connection or a notification stream was lost
// (network or protocol), a ping went unanswered within initTimeout, the
// server sent too much (too_large), or the handshake failed as in a
// verification. Like Verify, it returns only once any process it
// started is gone with its whole group, and every goroutine it started
// has ended. on is called from Watch's goroutine, never concurrently;
// while it runs, notifications wait (and coalesce) and pings are late.
func (v *Verifier) Watch(ctx context.Context, t Target, initTimeout, ping time.Duration, on func(WatchEvent)) error {
	limits := v.limits
	if initTimeout > 0 {
		limits.InitTimeout = initTimeout
	}
	if ping <= 0 {
		ping = DefaultWatchPing
	}
	run := &verification{v: v, limits: limits, target: t, start: time.Now(), rec: &recorder{}, held: true}
	err := run.watch(ctx, ping, on)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	e, _, _ := run.failure(ctx, err)
	return run.shown(e)
}

// probed is what one ping found: an error, or, on a 2026-07-28
// connection, what the server says it is.
type probed struct {
	err error
	who *WatchEvent
}

func (r *verification) watch(ctx context.Context, ping time.Duration, on func(WatchEvent)) (err error) {
	ctx, cutShort := context.WithCancel(ctx)
	defer cutShort()
	r.cutShort = cutShort

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
	// session bounds the requests that outlive a step of the loop (the
	// notification stream, a ping). It ends only after disconnect has
	// closed the transport, which ends them: a request whose context ends
	// first makes mcp-go start a goroutine to tell a stdio server so,
	// which would outlive Watch.
	session, endSession := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup // the notification stream's and the pings' goroutines
	change := func() {
		select {
		case changed <- struct{}{}:
		default: // one pending is as good as many
		}
	}
	c, initRes, err := r.handshake(ctx, ctx, listeners{toolsChanged: change, listedChanged: change, lost: func(err error) { note(lost, err) }})
	defer func() {
		if err != nil {
			r.exited() // before disconnect stops the child
		}
		cutShort()
		r.disconnect()
		endSession()
		wg.Wait()
	}()
	if err != nil {
		return err
	}
	r.enter(PhaseWatching, 0)
	close(watching)
	modern := mcp.IsModernProtocol(initRes.ProtocolVersion)
	if filter, ok := listensForChanges(initRes, r.target, true); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Listen(session, filter)
			note(lost, streamLost("the notification stream (subscriptions/listen)", err))
		}()
	}
	who := r.serverInfo(initRes.ServerInfo, initRes.Capabilities)
	on(who)

	// probe pings the server in the background, so that a ping that
	// waits for its deadline does not hold up the events.
	probe := func() <-chan probed {
		done := make(chan probed, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(session, r.limits.InitTimeout)
			defer cancel()
			if !modern {
				//lint:ignore SA1019 a session of 2025-11-25 or earlier has ping; only 2026-07-28 dropped it (the modern branch below)
				done <- probed{err: c.Ping(pctx)}
				return
			}
			res, err := c.Discover(pctx, mcp.DiscoverRequest{})
			if err != nil {
				done <- probed{err: err}
				return
			}
			var p probed
			if info := res.GetResultMeta().ServerInfo(); info != nil {
				ev := r.serverInfo(*info, res.Capabilities)
				p.who = &ev
			}
			done <- p
		}()
		return done
	}

	var exited <-chan struct{} // a stdio server's output ended
	if r.stdio != nil {
		exited = r.stdio.readDone
	}
	pinger := time.NewTicker(ping)
	defer pinger.Stop()
	var probing <-chan probed    // the ping under way
	var last time.Time           // the last WatchToolsChanged
	var pending <-chan time.Time // a notification waiting for WatchCoalesce
	for {
		select {
		case <-ctx.Done():
			// Cut short by a body over a limit, or Watch's ctx ended.
			return r.tally.tooLarge()
		case err := <-lost:
			if r.stdio != nil && closed(r.stdio.readDone) {
				return r.outputEnded() // why the stream was lost
			}
			return err
		case <-exited:
			return r.outputEnded()
		case <-changed:
			if wait := WatchCoalesce - time.Since(last); wait > 0 {
				if pending == nil {
					pending = time.After(wait)
				}
				continue
			}
			// A timer that fired but was not received yet is spent by
			// this event too.
			pending, last = nil, time.Now()
			on(WatchEvent{Kind: WatchToolsChanged})
		case <-pending:
			pending, last = nil, time.Now()
			on(WatchEvent{Kind: WatchToolsChanged})
		case <-pinger.C:
			if probing == nil {
				probing = probe()
			}
		case p := <-probing:
			probing = nil
			switch {
			case errors.Is(p.err, context.DeadlineExceeded):
				return newError(ClassTimeout, PhaseWatching, fmt.Sprintf("the server did not answer a ping within %s", r.limits.InitTimeout), p.err)
			case p.err != nil:
				return fmt.Errorf("a ping failed: %w", p.err)
			}
			if p.who != nil && *p.who != who {
				who = *p.who
				on(who)
			}
		}
	}
}

// serverInfo is the WatchConnected event for what the server says it is.
func (r *verification) serverInfo(info mcp.Implementation, caps mcp.ServerCapabilities) WatchEvent {
	var res Result // named's warnings are not shown: the verification has them
	r.named(&res, info)
	return WatchEvent{
		Kind:          WatchConnected,
		ServerName:    res.ServerName,
		ServerVersion: res.ServerVersion,
		ListChanged: caps.Tools != nil && caps.Tools.ListChanged || caps.Resources != nil && caps.Resources.ListChanged ||
			caps.Prompts != nil && caps.Prompts.ListChanged,
	}
}

// outputEnded is the error for a stdio server whose output ended.
func (r *verification) outputEnded() error {
	if ok, _ := r.exited(); !ok && errors.Is(r.stdio.readErr, errStdoutClosed) {
		return newError(ClassExited, PhaseWatching, "server closed stdout (the process kept running)", r.stdio.readErr)
	}
	return r.stdio.readErr
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// streamLost is the error for a stream of notifications that ended, with
// err or without one: network, unless err says more (an HTTP status, a
// limit).
func streamLost(what string, err error) error {
	if err == nil {
		return newError(ClassNetwork, PhaseWatching, what+" ended", nil)
	}
	if e := classify(err, PhaseWatching, context.Background(), false, 0); e.Class != ClassProtocol {
		return e
	}
	return newError(ClassNetwork, PhaseWatching, what+" ended: "+rootMessage(err), err)
}

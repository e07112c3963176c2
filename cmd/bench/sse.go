//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// sseServer is the server whose renames the SSE figures publish.
	sseServer = "sse-srv"
	// sseListed is how many more servers the dashboard lists. A tab gets
	// every server's row and status when it connects, so a tab that never
	// reads stalls on that snapshot alone: it overflows the tab's sockets
	// and the hub's buffer for it without an event to any other client,
	// so every block can open a fresh one.
	sseListed = 500
	// sseBlock is how many rounds run in one condition before the other:
	// alternating in blocks spreads the machine's noise over both.
	sseBlock = 5
	// sseRoundTimeout bounds one event's delivery to every client: a lost
	// event fails the figure instead of hanging the run.
	sseRoundTimeout = 10 * time.Second
	// hubHolds is more events than the dashboard holds for a connection
	// whose socket takes no more: web's streamBuffer (256), r3labs' channel
	// per subscriber (64) and one in hand for each of its two goroutines
	// make 322. With this many events of its snapshot still unwritten a
	// connection's buffer is full, so the hub marks it behind and drops
	// live events for it: it is stalled as far as the dashboard can tell.
	hubHolds = 350
)

// sseFigures measures the fan-out of one server's change to SSEClients
// open /events streams, through the whole dashboard: a rename through the
// JSON API commits to bbolt, and the hub publishes the server's row and
// status fragments to every stream. One delivery is the time from the
// store announcing the change to a client having read the status event
// (the second of the two) off its socket.
//
// The stalled-client figure compares events with one more connection
// open that never reads against events without it, in alternating blocks
// of sseBlock (SSEEvents events each). It compares the median over events
// of each event's p99 over the clients: the p99 of all deliveries pooled
// is set by the few events during which the garbage collector ran (one in
// 40, +16 ms), which fall in either condition by chance and swing it by
// up to 19 ms.
func sseFigures(ctx context.Context, cfg *config) ([]figure, error) {
	a, err := startFreshApp(cfg, "sse", 2)
	if err != nil {
		return nil, err
	}
	defer a.close()
	rn := &renamer{a: a, sc: cfg.bins.fixtureCmd("-tools", "3")}
	for i := range sseListed {
		if err := a.addServer(ctx, fmt.Sprintf("listed-%03d", i), rn.sc); err != nil {
			return nil, err
		}
	}
	if err := a.addServer(ctx, sseServer, rn.sc); err != nil {
		return nil, err
	}
	if err := a.login(ctx); err != nil {
		return nil, err
	}
	// Named before any stream opens, so every snapshot shows a name
	// unlike the server's id.
	if _, err := rn.rename(ctx, "round-0"); err != nil {
		return nil, err
	}
	smallest, err := smallestEvent(ctx, a)
	if err != nil {
		return nil, err
	}
	fo, err := openFanout(ctx, a, cfg.SSEClients, "round-0")
	if err != nil {
		return nil, err
	}
	defer fo.close()

	var without, with events
	oneWarmUp := func() (bool, error) { return true, nil }
	unwritten := snapshotEvents // the fewest a stalled connection had
	for b := 0; len(with) < cfg.SSEEvents; b++ {
		n := min(sseBlock, cfg.SSEEvents-len(with))
		for _, stalled := range []bool{b%2 == 1, b%2 == 0} {
			if !stalled {
				e, err := fo.block(ctx, rn, "without-"+strconv.Itoa(b), n, oneWarmUp)
				if err != nil {
					return nil, err
				}
				without = append(without, e...)
				continue
			}
			e, u, err := fo.stalledBlock(ctx, rn, "stalled-"+strconv.Itoa(b), n, smallest)
			if err != nil {
				return nil, err
			}
			with, unwritten = append(with, e...), min(unwritten, u)
		}
	}

	all := without.pooled()
	p99 := ms(all.quantile(0.99))
	fan := figure{
		Name: fmt.Sprintf("SSE fan-out: status event to %d clients, p99", cfg.SSEClients),
		Unit: "ms", Value: p99, Target: "≤ 100 ms", Pass: p99 <= 100,
		Note: fmt.Sprintf("p50 %.1f ms; slowest event's p99 %.1f ms; %d events, %d servers listed",
			ms(all.median()), ms(without.p99s().quantile(1)), len(without), sseListed+1),
	}
	base, val := ms(without.p99s().median()), ms(with.p99s().median())
	cost := figure{
		Name: "SSE fan-out: one stalled client's cost to the others (median of each event's p99)",
		Unit: "ms", Value: val, Baseline: "without it", BaseVal: base,
		Ratio: val / base, Target: "≤ +5 ms", Pass: val-base <= 5,
		Note: fmt.Sprintf("%+.1f ms; all deliveries' p99 %.1f ms with, %.1f without; ≥ %d events unwritten to the stalled client",
			val-base, ms(with.pooled().quantile(0.99)), p99, unwritten),
	}
	return []figure{fan, cost}, nil
}

// events are the deliveries of several events, one samples each.
type events []samples

func (e events) pooled() samples {
	var all samples
	for _, s := range e {
		all = append(all, s...)
	}
	return all
}

// p99s returns each event's p99 over its clients.
func (e events) p99s() samples {
	p := make(samples, len(e))
	for i, s := range e {
		p[i] = s.quantile(0.99)
	}
	return p
}

// renamer changes the server's name through the JSON API, as a person
// editing it would. Each name marks one round's events.
type renamer struct {
	a  *app
	sc serverCmd
}

// rename sets the name and returns when the store announced the change,
// which is when its events' delivery starts.
func (r *renamer) rename(ctx context.Context, name string) (time.Time, error) {
	err := r.a.api(ctx, http.MethodPut, "/api/v1/servers/"+sseServer, map[string]any{
		"name": name, "transport": "stdio", "command": r.sc.command, "args": r.sc.args,
		"default_policy": "ask",
	}, http.StatusOK, nil)
	return time.Unix(0, r.a.changedAt.Load()), err
}

// snapshotEvents is how many events a connecting tab gets.
const snapshotEvents = 2 * (sseListed + 1)

// smallestEvent reads one snapshot and returns the size of its smallest
// event (name and data): a lower bound of what any of them takes on the
// wire.
func smallestEvent(ctx context.Context, a *app) (int, error) {
	c, err := a.openSSE(ctx, snapshotEvents)
	if err != nil {
		return 0, err
	}
	defer c.close()
	ctx, cancel := context.WithTimeout(ctx, sseRoundTimeout)
	defer cancel()
	smallest := 0
	for range snapshotEvents {
		ev, err := c.waitFor(ctx, func(sseEvent) bool { return true })
		if err != nil {
			return 0, fmt.Errorf("read a snapshot: %w", err)
		}
		if n := len(ev.name) + len(ev.data); smallest == 0 || n < smallest {
			smallest = n
		}
	}
	return smallest, nil
}

// fanout is the open streams, each read by a goroutine of its own as a
// browser tab reads its stream, whatever the rest of the bench does.
type fanout struct {
	a     *app
	conns []*sseConn
	cur   atomic.Pointer[delivery] // the round the readers look for
	wg    sync.WaitGroup
}

// delivery is one round: when each client read the status event that
// follows the row event carrying name.
type delivery struct {
	name string
	at   []time.Time // by client; each written only by its reader
	left atomic.Int64
	done chan struct{} // closed when left reaches 0
}

func newDelivery(name string, clients int) *delivery {
	d := &delivery{name: name, at: make([]time.Time, clients), done: make(chan struct{})}
	d.left.Store(int64(clients))
	return d
}

// openFanout opens n streams and returns once each has read the snapshot
// it gets on connecting (showing the server named name).
func openFanout(ctx context.Context, a *app, n int, name string) (*fanout, error) {
	f := &fanout{a: a}
	d := newDelivery(name, n)
	f.cur.Store(d)
	for i := range n {
		c, err := a.openSSE(ctx, 64)
		if err != nil {
			f.close()
			return nil, err
		}
		f.conns = append(f.conns, c)
		f.wg.Add(1)
		go f.consume(i, c)
	}
	if err := d.wait(ctx); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// consume reads client i's events until its stream ends. A rename
// publishes the row, then the status, in that order on every stream; the
// status event after a row showing the current round's name is the
// round's delivery (counted once, should a resync send it again).
func (f *fanout) consume(i int, c *sseConn) {
	defer f.wg.Done()
	var d *delivery
	for ev := range c.events {
		switch ev.name {
		case "row-" + sseServer:
			d = nil
			if cur := f.cur.Load(); strings.Contains(ev.data, ">"+cur.name+"<") {
				d = cur
			}
		case "status-" + sseServer:
			if d != nil && d.at[i].IsZero() {
				d.at[i] = ev.at
				if d.left.Add(-1) == 0 {
					close(d.done)
				}
			}
			d = nil
		}
	}
}

// wait returns when every client has its delivery.
func (d *delivery) wait(ctx context.Context) error {
	t := time.NewTimer(sseRoundTimeout)
	defer t.Stop()
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%d of %d SSE clients did not get the status event of %q within %v",
			d.left.Load(), len(d.at), d.name, sseRoundTimeout)
	}
}

// round renames the server to name and returns each client's delivery
// time of its status event.
func (f *fanout) round(ctx context.Context, rn *renamer, name string) (samples, error) {
	d := newDelivery(name, len(f.conns))
	f.cur.Store(d)
	start, err := rn.rename(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := d.wait(ctx); err != nil {
		return nil, err
	}
	s := make(samples, len(d.at))
	for i, at := range d.at {
		s[i] = at.Sub(start)
	}
	return s, nil
}

// block runs warm-up rounds until ready says so (at least one), then n
// rounds named prefix-1…, and returns the deliveries of those n. Warming
// up rather than waiting matters: after a pause of a fifth of a second
// the next three events are slower (+7, +4, +2 ms at p99), with or
// without a stalled connection alike.
func (f *fanout) block(ctx context.Context, rn *renamer, prefix string, n int, ready func() (bool, error)) (events, error) {
	deadline := time.Now().Add(sseRoundTimeout)
	for i := 0; ; i++ {
		if _, err := f.round(ctx, rn, fmt.Sprintf("%s-warm-%d", prefix, i)); err != nil {
			return nil, err
		}
		ok, err := ready()
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: not ready after %v of warm-up", prefix, sseRoundTimeout)
		}
	}
	var e events
	for i := 1; i <= n; i++ {
		s, err := f.round(ctx, rn, prefix+"-"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		e = append(e, s)
	}
	return e, nil
}

// close ends every stream and waits for their readers.
func (f *fanout) close() {
	for _, c := range f.conns {
		c.close()
	}
	f.wg.Wait()
}

// stalledBlock runs a block with a stalled connection open, warming up
// until the connection has settled, and returns its deliveries and how
// many events of its snapshot the connection had at least left unwritten
// at the end. smallest bounds the size of an event on the wire; at least
// hubHolds must be left, or the hub might not have stalled it.
func (f *fanout) stalledBlock(ctx context.Context, rn *renamer, prefix string, n, smallest int) (events, int, error) {
	st, err := openStalled(ctx, f.a)
	if err != nil {
		return nil, 0, err
	}
	defer st.close()
	e, err := f.block(ctx, rn, prefix, n, st.settled)
	if err != nil {
		return nil, 0, err
	}
	held, _, err := st.queued()
	if err != nil {
		return nil, 0, err
	}
	unwritten := snapshotEvents - int(held)/smallest
	if unwritten < hubHolds {
		return nil, 0, fmt.Errorf("the stalled SSE connection took %d bytes, maybe all but %d events of its snapshot: list more servers", held, unwritten)
	}
	return e, unwritten, nil
}

// stalledConn is an /events stream that is never read after its response
// header, as a tab whose browser froze or whose network died.
type stalledConn struct {
	conn      net.Conn
	closeOnce sync.Once
	last      int64     // bytes the kernel held, see settled
	since     time.Time // since when
}

// settleFor is how long the kernel must hold the same for a stalled
// connection before it counts as settled.
const settleFor = 100 * time.Millisecond

// openStalled opens /events with the session of a.client on a raw
// connection. It dials with an Ethernet-sized MSS and a small receive
// buffer: over loopback's 64 KiB segments Linux gives the dashboard's end
// a send buffer of megabytes. A tab across a real network stalls the same
// way, only after fewer bytes.
func openStalled(ctx context.Context, a *app) (*stalledConn, error) {
	u, err := url.Parse(a.base)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			if serr == nil {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, 1460)
			}
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	st := &stalledConn{conn: conn}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+a.eventsPath(), nil)
	if err != nil {
		st.close()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for _, c := range a.client.Jar.Cookies(u) {
		req.AddCookie(c)
	}
	conn.SetDeadline(time.Now().Add(sseRoundTimeout))
	if err := req.Write(conn); err != nil {
		st.close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 16), req)
	if err != nil {
		st.close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		st.close()
		return nil, fmt.Errorf("stalled /events: %d", resp.StatusCode)
	}
	conn.SetDeadline(time.Time{}) // only for the header: it is never read again
	return st, nil
}

// settled reports whether the dashboard has written all it can to the
// connection: what the kernel holds for it has stayed the same for
// settleFor, or the dashboard gave up on the connection (a write to it
// timed out: hub.StreamWriteTimeout in web/internal/hub), which a slow run can reach.
func (s *stalledConn) settled() (bool, error) {
	q, gone, err := s.queued()
	if err != nil || gone {
		return gone, err
	}
	if q == 0 || q != s.last {
		s.last, s.since = q, time.Now()
		return false, nil
	}
	return time.Since(s.since) >= settleFor, nil
}

// queued returns the bytes the kernel holds for the connection: on the
// dashboard's end, written but not acknowledged, and on ours, received
// but not read. While it stays the same the dashboard writes nothing.
// gone reports that the connection is no longer there: the dashboard
// reset it.
func (s *stalledConn) queued() (held int64, gone bool, err error) {
	data, err := os.ReadFile("/proc/self/net/tcp")
	if err != nil {
		return 0, false, err
	}
	local, err := procAddr(s.conn.LocalAddr())
	if err != nil {
		return 0, false, err
	}
	remote, err := procAddr(s.conn.RemoteAddr())
	if err != nil {
		return 0, false, err
	}
	var total int64
	found := 0
	for _, line := range strings.Split(string(data), "\n")[1:] {
		// sl local_address rem_address st tx_queue:rx_queue …
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		var q string
		switch {
		case f[1] == remote && f[2] == local: // the dashboard's end
			q, _, _ = strings.Cut(f[4], ":")
		case f[1] == local && f[2] == remote: // ours
			_, q, _ = strings.Cut(f[4], ":")
		default:
			continue
		}
		n, err := strconv.ParseInt(q, 16, 64)
		if err != nil {
			return 0, false, fmt.Errorf("/proc/self/net/tcp: %q: %w", line, err)
		}
		total += n
		found++
	}
	if found < 2 { // one end or both reset
		return 0, true, nil
	}
	return total, false, nil
}

// procAddr formats a TCP address as /proc/net/tcp does: the IPv4 address
// as a little-endian (x86, arm64) 32-bit hex number, then the port.
func procAddr(addr net.Addr) (string, error) {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return "", err
	}
	if !ap.Addr().Is4() {
		return "", fmt.Errorf("%v is not an IPv4 address", addr)
	}
	b := ap.Addr().As4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], ap.Port()), nil
}

func (s *stalledConn) close() { s.closeOnce.Do(func() { s.conn.Close() }) }

//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/cluster"
	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/internal/grants"
	"github.com/switchboard-dev/switchboard/internal/verify"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/web"
)

const (
	benchToken    = "bench-token-0123456789abcdef"
	benchMCPToken = "bench-mcp-token-0123456789abcdef"
)

// app is the whole dashboard in this process, as `switchboard serve`
// wires it, on a loopback port with a bbolt file of its own (db), or as
// a team's replica on etcd (db nil).
type app struct {
	db *bolt.DB
	st appStore
	// coord, a replica's, is closed before its store (see close).
	coord         interface{ Close() error }
	web           *web.Server
	verifications *verify.Service
	hs            *http.Server
	base          string
	client        *http.Client // keeps the session cookie once logged in
	dbPath        string

	// changedAt is when the store last announced a committed change
	// (UnixNano), just before the dashboard publishes its events: the
	// start of an SSE delivery.
	changedAt atomic.Int64
}

// appStore is the store an app runs on: a bbolt file, or etcd.
type appStore interface {
	store.Store
	Revision() string
	Close() error
}

// startApp starts the dashboard on a new (or the given existing) database
// file.
func startApp(dbPath string, concurrency int) (*app, error) {
	db, err := bolt.Open(dbPath, bolt.Options{})
	if err != nil {
		return nil, err
	}
	a, err := startAppOn(db, nil, concurrency)
	if err != nil {
		return nil, err
	}
	a.db, a.dbPath = db, dbPath
	return a, nil
}

// startAppOn starts the dashboard on db, a replica of c (nil: on its
// own); it closes db when it cannot start, or when it is closed.
func startAppOn(db appStore, c cluster.Cluster, concurrency int) (*app, error) {
	a := &app{st: db}
	// Subscribed before the dashboard, so called just before it.
	db.Subscribe(func(store.Change) { a.changedAt.Store(time.Now().UnixNano()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, err
	}
	// Wired as switchboard serve wires it (cmd/switchboard/serve.go).
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	verifier := discovery.NewVerifier(discovery.Limits{}, nil)
	keeper := grants.NewKeeper(db, verifier)
	verifications := verify.New(verify.Config{Concurrency: concurrency, Logger: logger, Cluster: c}, db, verifier, keeper)
	srv, err := web.New(web.Config{
		Token:  benchToken,
		MCP:    web.MCPConfig{Token: benchMCPToken},
		Logger: logger,
	}, web.Deps{Store: db, Verify: verifications, Verifier: verifier, Grants: keeper, Cluster: c})
	if err != nil {
		verifications.Close()
		ln.Close()
		db.Close()
		return nil, err
	}
	verifications.Start()
	a.web, a.verifications, a.base = srv, verifications, "http://"+ln.Addr().String()
	a.hs = &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go a.hs.Serve(ln)
	jar, _ := cookiejar.New(nil)
	a.client = &http.Client{
		Jar: jar,
		Transport: &http.Transport{
			MaxIdleConns: 2000, MaxIdleConnsPerHost: 2000, MaxConnsPerHost: 0,
			IdleConnTimeout: time.Minute,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return a, nil
}

// startFreshApp starts the dashboard on a new database in a new
// directory (named after what it is for) of the run's scratch directory.
func startFreshApp(cfg *config, purpose string, concurrency int) (*app, error) {
	dir, err := os.MkdirTemp(cfg.dir, purpose+"-")
	if err != nil {
		return nil, err
	}
	return startApp(filepath.Join(dir, "switchboard.db"), concurrency)
}

// close stops jobs, streams and the listener, and closes the database.
func (a *app) close() {
	a.web.Close()
	a.verifications.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := a.hs.Shutdown(ctx); err != nil {
		a.hs.Close()
	}
	a.client.CloseIdleConnections()
	if a.coord != nil {
		a.coord.Close() // resigns, and lets the claims go, before the store's connection closes
	}
	a.st.Close()
}

// api sends a JSON API request and decodes a JSON answer into out (if not
// nil). A status other than want is an error.
func (a *app) api(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// addServer registers a stdio server through the API.
func (a *app) addServer(ctx context.Context, id string, sc serverCmd) error {
	return a.api(ctx, http.MethodPost, "/api/v1/servers", map[string]any{
		"id": id, "name": id, "transport": "stdio", "command": sc.command, "args": sc.args,
		"default_policy": "ask",
	}, http.StatusCreated, nil)
}

// verify starts a verification through the API, confirming the launch
// the bench itself registered, and returns its job id.
func (a *app) verify(ctx context.Context, id string) (string, error) {
	var out struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	if err := a.api(ctx, http.MethodPost, "/api/v1/servers/"+id+"/verify", map[string]any{"confirm": true}, http.StatusAccepted, &out); err != nil {
		return "", err
	}
	return out.Job.ID, nil
}

// login starts a browser session (cookie kept by a.client), as a person
// pasting the token into the login form does.
func (a *app) login(ctx context.Context) error {
	form := url.Values{"token": {benchToken}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return fmt.Errorf("login: %d", resp.StatusCode)
	}
	return nil
}

// sseEvent is one event of the /events stream.
type sseEvent struct {
	name string
	data string
	at   time.Time // when its last line was read
}

// sseConn is an open /events stream. Events arrive on events until the
// stream ends (then events is closed).
type sseConn struct {
	resp   *http.Response
	events chan sseEvent
}

// eventsPath is the stream a tab opens right after its page was rendered:
// it names the store's current revision, so its snapshot holds each
// server's row and status (and no catch-up signals).
func (a *app) eventsPath() string { return "/events?rev=" + url.QueryEscape(a.st.Revision()) }

// openSSE opens /events with the session of a.client (log in first). The
// reader keeps up to buffer events; a slow consumer stalls the stream as
// a slow browser would.
func (a *app) openSSE(ctx context.Context, buffer int) (*sseConn, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+a.eventsPath(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("/events: %d", resp.StatusCode)
	}
	c := &sseConn{resp: resp, events: make(chan sseEvent, buffer)}
	go c.read()
	return c, nil
}

func (c *sseConn) read() {
	defer close(c.events)
	sc := bufio.NewScanner(c.resp.Body)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var ev sseEvent
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" || len(data) > 0 {
				ev.data = strings.Join(data, "\n")
				ev.at = time.Now()
				c.events <- ev
			}
			ev, data = sseEvent{}, nil
		case strings.HasPrefix(line, "event:"):
			ev.name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

func (c *sseConn) close() { c.resp.Body.Close() }

// waitFor returns the first event for which match is true.
func (c *sseConn) waitFor(ctx context.Context, match func(sseEvent) bool) (sseEvent, error) {
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return sseEvent{}, fmt.Errorf("the event stream ended")
			}
			if match(ev) {
				return ev, nil
			}
		case <-ctx.Done():
			return sseEvent{}, ctx.Err()
		}
	}
}

// finalStatus reports the outcome an SSE status event of server id shows,
// or "" while it is not final.
func finalStatus(ev sseEvent, id string) string {
	if ev.name != "status-"+id {
		return ""
	}
	for _, s := range []string{"success", "failed", "timeout", "cancelled"} {
		if strings.Contains(ev.data, `data-status="`+s+`"`) {
			return s
		}
	}
	return ""
}

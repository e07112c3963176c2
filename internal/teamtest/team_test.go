// Package teamtest runs a team's Switchboard as it is deployed: a real
// three-member etcd cluster of separate processes (cmd/etcd) and three
// `switchboard serve -store etcd://…` replicas in front of it, and holds
// it to what a team relies on: one catalog live on every replica, one
// verification at a time, approvals from any replica, a leader that
// hands over when it dies with no verification lost or doubled, a
// cluster that survives a member's death, and a replica cut off from
// etcd that refuses changes rather than diverge.
package teamtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
)

// bin holds the binaries TestMain builds.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "teamtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	for name, pkg := range map[string]string{"etcd": "./cmd/etcd", "switchboard": "./cmd/switchboard", "mcp-fixture": "./cmd/mcp-fixture"} {
		build := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg)
		build.Dir = "../.."
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build", name+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const (
	apiToken = "team-api-token-0123456789abcdef0123456789abcdef"
	mcpToken = "team-mcp-token-0123456789"
	leaseTTL = 2 // seconds
)

// proc is a process of the test, killed (its whole group) at the end.
type proc struct {
	cmd    *exec.Cmd
	stdout *lockedBuffer
	stderr *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(filepath.Join(bin, name), args...), stdout: &lockedBuffer{}, stderr: &lockedBuffer{}}
	// The cluster speaks plain HTTP on loopback: said so, as a team's
	// replicas must (-etcd-insecure).
	// The replicas share one secret key, as a team's must.
	p.cmd.Env = append(append(os.Environ(), "SWITCHBOARD_ETCD_INSECURE=1", "SWITCHBOARD_SECRET_KEY="+teamKey, "SWITCHBOARD_REGISTRY=none"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	return p
}

// kill ends the process at once, as a crash or a pulled plug would.
func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cluster is three etcd members; clients are their client URLs.
type cluster struct {
	members []*proc
	clients []string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	c := &cluster{}
	var peers, initial []string
	for i := range 3 {
		peers = append(peers, fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
		c.clients = append(c.clients, fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := range 3 {
		c.members = append(c.members, start(t, nil, "etcd", "--name", fmt.Sprintf("m%d", i), "--data-dir", t.TempDir(),
			"--listen-client-urls", c.clients[i], "--advertise-client-urls", c.clients[i],
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new", "--initial-cluster-token", "switchboard-team-test",
			"--log-level", "error"))
	}
	waitFor(t, 30*time.Second, "the etcd cluster healthy", func() bool {
		for _, u := range c.clients {
			resp, err := http.Get(u + "/health")
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), `"health":"true"`) {
				return false
			}
		}
		return true
	})
	return c
}

// proxies are a proxy to each member (cut when the test ends) and their
// endpoints: a replica started on them can be cut off from the cluster,
// or find it silent.
func (c *cluster) proxies(t *testing.T) ([]*etcdtest.Proxy, []string) {
	t.Helper()
	var proxies []*etcdtest.Proxy
	var endpoints []string
	for _, u := range c.clients {
		p, err := etcdtest.ProxyTo(u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Cut)
		proxies = append(proxies, p)
		endpoints = append(endpoints, p.Endpoint)
	}
	return proxies, endpoints
}

// storeURL is the -store URL of endpoints.
func storeURL(endpoints []string) string {
	var hosts []string
	for _, e := range endpoints {
		hosts = append(hosts, strings.TrimPrefix(e, "http://"))
	}
	return "etcd://" + strings.Join(hosts, ",")
}

// replica is a `switchboard serve` on the cluster.
type replica struct {
	name string
	p    *proc
	base string
	http *http.Client // with its browser session
}

var openURL = regexp.MustCompile(`Open (http://127\.0\.0\.1:\d+)/login\?code=([0-9a-f]{64})`)

func startReplica(t *testing.T, name string, endpoints []string, env ...string) *replica {
	t.Helper()
	p := start(t, append([]string{"SWITCHBOARD_TOKEN=" + apiToken, "SWITCHBOARD_MCP_TOKEN=" + mcpToken, "SWITCHBOARD_DB=" + filepath.Join(t.TempDir(), "sb.db")}, env...),
		"switchboard", "serve", "-addr", "127.0.0.1:0", "-store", storeURL(endpoints), "-lease-ttl", fmt.Sprint(leaseTTL))
	var m []string
	waitFor(t, 30*time.Second, name+" started", func() bool { m = openURL.FindStringSubmatch(p.stdout.String()); return m != nil })
	jar, _ := cookiejar.New(nil)
	r := &replica{name: name, p: p, base: m[1], http: &http.Client{Jar: jar}}
	resp, err := r.http.Get(r.base + "/login?code=" + m[2]) // the browser's session, shared by every replica
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return r
}

// api calls the JSON API with the shared token.
func (r *replica) api(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, r.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, r.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (r *replica) must(t *testing.T, method, path string, body any, want int) []byte {
	t.Helper()
	code, b := r.api(t, method, path, body)
	if code != want {
		t.Fatalf("%s %s on %s = %d %s; want %d", method, path, r.name, code, b, want)
	}
	return b
}

// leader reports whether the replica says it leads (false if it does
// not answer).
func (r *replica) leader() bool {
	resp, err := http.Get(r.base + "/healthz")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var h struct {
		Leader bool `json:"leader"`
	}
	json.NewDecoder(resp.Body).Decode(&h)
	return h.Leader
}

// history is the server's verifications, newest first.
func (r *replica) history(t *testing.T, id string) []struct {
	JobID     string    `json:"job_id"`
	Trigger   string    `json:"trigger"`
	StartedAt time.Time `json:"started_at"`
} {
	t.Helper()
	var h struct {
		History []struct {
			JobID     string    `json:"job_id"`
			Trigger   string    `json:"trigger"`
			StartedAt time.Time `json:"started_at"`
		} `json:"history"`
	}
	json.Unmarshal(r.must(t, http.MethodGet, "/api/v1/servers/"+id+"/history", nil, http.StatusOK), &h)
	return h.History
}

// event is one SSE event of a tab.
type event struct{ name, data string }

// tab is a replica's /events stream, read in the background.
type tab struct {
	events chan event
}

func (r *replica) openTab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.base+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := r.http.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("open %s's tab: %v %v", r.name, resp, err)
	}
	tb := &tab{events: make(chan event, 4096)}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		var ev event
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ") + "\n"
			case line == "":
				if ev.name != "" {
					select {
					case tb.events <- ev:
					default:
					}
				}
				ev = event{}
			}
		}
	}()
	return tb
}

// until waits for an event that ok accepts.
func (tb *tab) until(t *testing.T, d time.Duration, what string, ok func(event) bool) event {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case ev := <-tb.events:
			if ok(ev) {
				return ev
			}
		case <-timer.C:
			t.Fatalf("no %s within %s", what, d)
		}
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fixture is a server of the test fixture with n tools, its start slowed
// by delay.
func fixture(id string, tools int, delay string) map[string]any {
	return map[string]any{"id": id, "name": "Fixture " + id, "transport": "stdio", "command": filepath.Join(bin, "mcp-fixture"),
		"args": []string{"-tools", fmt.Sprint(tools), "-startup-delay", delay}, "default_policy": "allow"}
}

func TestTeamOnAnETCDCluster(t *testing.T) {
	etcd := startCluster(t)
	// C reaches the cluster through proxies that the last step cuts.
	proxies, viaProxies := etcd.proxies(t)
	a, b := startReplica(t, "A", etcd.clients), startReplica(t, "B", etcd.clients)
	c := startReplica(t, "C", viaProxies)
	rs := []*replica{a, b, c}
	waitFor(t, 10*time.Second, "one leader", func() bool {
		n := 0
		for _, r := range rs {
			if r.leader() {
				n++
			}
		}
		return n == 1
	})

	t.Run("a server added on A shows live on B's and C's tabs", func(t *testing.T) {
		tabs := []*tab{b.openTab(t), c.openTab(t)}
		a.must(t, http.MethodPost, "/api/v1/servers", fixture("shared", 2, "0s"), http.StatusCreated)
		for i, tb := range tabs {
			tb.until(t, 10*time.Second, fmt.Sprintf("the servers list changing on %s", rs[i+1].name), func(ev event) bool { return ev.name == "servers" })
		}
	})

	t.Run("Verify pressed on A and B at once runs one job", func(t *testing.T) {
		a.must(t, http.MethodPost, "/api/v1/servers", fixture("once", 2, "1500ms"), http.StatusCreated)
		var wg sync.WaitGroup
		ids := make([]string, 2)
		for i, r := range []*replica{a, b} {
			wg.Go(func() {
				body := r.must(t, http.MethodPost, "/api/v1/servers/once/verify", map[string]any{"confirm": true}, http.StatusAccepted)
				var j struct {
					Job struct {
						ID string `json:"id"`
					} `json:"job"`
				}
				json.Unmarshal(body, &j)
				ids[i] = j.Job.ID
			})
		}
		wg.Wait()
		waitFor(t, 30*time.Second, "the verification's end", func() bool { return len(a.history(t, "once")) > 0 })
		time.Sleep(500 * time.Millisecond)
		if h := c.history(t, "once"); len(h) != 1 || ids[0] != ids[1] || ids[0] != h[0].JobID {
			t.Errorf("A and B answered jobs %q; the history holds %+v; want one job", ids, h)
		}
	})

	t.Run("an ask call through C's /mcp is approved on A", func(t *testing.T) {
		a.must(t, http.MethodPost, "/api/v1/servers/shared/verify", map[string]any{"confirm": true}, http.StatusAccepted)
		waitFor(t, 30*time.Second, "shared verified", func() bool { return len(a.history(t, "shared")) > 0 })
		a.must(t, http.MethodPut, "/api/v1/servers/shared/tools/tool_000/policy", map[string]any{"policy": "ask"}, http.StatusOK)
		tabA := a.openTab(t) // A's tab counts as an approver on every replica
		tabA.until(t, 10*time.Second, "A's tab's first events", func(ev event) bool { return ev.name == "approvals" })
		time.Sleep(500 * time.Millisecond)
		tr, err := transport.NewStreamableHTTP(c.base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + mcpToken}))
		if err != nil {
			t.Fatal(err)
		}
		agent := client.NewClient(tr)
		defer agent.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := agent.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.ProtocolVersion20251125,
			ClientInfo: mcp.Implementation{Name: "team-agent", Version: "1"}}}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := agent.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "shared__tool_000", Arguments: map[string]any{"q": 1}}})
			done <- err
		}()
		card := tabA.until(t, 15*time.Second, "C's call as a card on A", func(ev event) bool {
			return ev.name == "approvals" && strings.Contains(ev.data, "tool_000")
		})
		id := regexp.MustCompile(`data-approval="([^"]+)"`).FindStringSubmatch(card.data)
		if id == nil {
			t.Fatalf("card = %s", card.data)
		}
		a.must(t, http.MethodPost, "/api/v1/approvals/"+id[1], map[string]any{"decision": "allow_once"}, http.StatusOK)
		if err := <-done; err != nil {
			t.Fatalf("the call approved on A = %v", err)
		}
	})

	t.Run("an agent's session opened on A is served by B and C", func(t *testing.T) {
		post := func(r *replica, session, body string) (*http.Response, string) {
			req, _ := http.NewRequest(http.MethodPost, r.base+"/mcp", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+mcpToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("MCP-Protocol-Version", "2025-11-25")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp, string(b)
		}
		resp, body := post(a, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"roaming-agent","version":"1"}}}`)
		session := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || session == "" {
			t.Fatalf("initialize on A = %d %s, session %q", resp.StatusCode, body, session)
		}
		post(a, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, r := range []*replica{b, c} {
			resp, body := post(r, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
			if resp.StatusCode != http.StatusOK || !strings.Contains(body, "shared__tool_000") {
				t.Errorf("tools/list on %s with A's session = %d %s; want it served", r.name, resp.StatusCode, body)
			}
		}
	})

	t.Run("each replica's /metrics tells its store's latency and its etcd session", func(t *testing.T) {
		for _, r := range rs {
			body := string(r.must(t, http.MethodGet, "/metrics", nil, http.StatusOK))
			for _, want := range []string{`switchboard_store_request_duration_seconds_count{op="read"}`,
				`switchboard_store_request_duration_seconds_count{op="write"}`, "switchboard_etcd_session 1", "switchboard_etcd_session_lapses_total 0"} {
				if !strings.Contains(body, want) {
					t.Errorf("%s's /metrics lacks %s", r.name, want)
				}
			}
		}
	})

	t.Run("the leader dies: another takes over within the lease, no verification lost or doubled", func(t *testing.T) {
		on := true
		srv := fixture("ticking", 1, "0s")
		srv["ttl_seconds"], srv["auto_refresh"] = 10, on
		a.must(t, http.MethodPost, "/api/v1/servers", srv, http.StatusCreated)
		a.must(t, http.MethodPost, "/api/v1/servers/ticking/verify", map[string]any{"confirm": true}, http.StatusAccepted)
		waitFor(t, 30*time.Second, "the first verification", func() bool { return len(a.history(t, "ticking")) > 0 })
		waitFor(t, 30*time.Second, "a TTL re-verification by the leader", func() bool { return len(a.history(t, "ticking")) >= 2 })
		var leader *replica
		for _, r := range rs {
			if r.leader() {
				leader = r
			}
		}
		if leader == nil {
			t.Fatal("no leader")
		}
		killed := time.Now()
		leader.p.kill()
		var alive []*replica
		for _, r := range rs {
			if r != leader {
				alive = append(alive, r)
			}
		}
		waitFor(t, 3*time.Duration(leaseTTL)*time.Second+5*time.Second, "a new leader", func() bool { return alive[0].leader() || alive[1].leader() })
		t.Logf("a new leader %s after %s's death (lease TTL %d s)", time.Since(killed).Round(10*time.Millisecond), leader.name, leaseTTL)
		// Two more TTLs: the new leader keeps the server fresh.
		before := len(alive[0].history(t, "ticking"))
		waitFor(t, 40*time.Second, "two more TTL re-verifications", func() bool { return len(alive[0].history(t, "ticking")) >= before+2 })
		h := alive[0].history(t, "ticking")
		for i := 0; i+1 < len(h); i++ {
			gap := h[i].StartedAt.Sub(h[i+1].StartedAt)
			switch {
			case gap < 5*time.Second:
				t.Errorf("verifications %s and %s only %s apart: doubled", h[i+1].JobID, h[i].JobID, gap)
			case gap > 10*time.Second+time.Duration(leaseTTL)*time.Second+8*time.Second:
				t.Errorf("verifications %s and %s %s apart: one was lost", h[i+1].JobID, h[i].JobID, gap)
			}
		}
		rs = alive
	})

	t.Run("an etcd member dies: everything keeps working", func(t *testing.T) {
		etcd.members[2].kill()
		r := rs[0]
		r.must(t, http.MethodPost, "/api/v1/servers", fixture("after-member", 1, "0s"), http.StatusCreated)
		for _, o := range rs {
			o.must(t, http.MethodGet, "/api/v1/servers/after-member", nil, http.StatusOK)
		}
	})

	t.Run("C cut off from etcd refuses changes; the others go on", func(t *testing.T) {
		if c.p.cmd.ProcessState != nil {
			t.Skip("C was the leader and died")
		}
		for _, p := range proxies {
			p.Cut()
		}
		start := time.Now()
		code, body := c.api(t, http.MethodPost, "/api/v1/servers", fixture("diverged", 1, "0s"))
		if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "cannot reach its store") {
			t.Errorf("a change on C = %d %s; want 503 saying it cannot reach its store", code, body)
		}
		t.Logf("C refused after %s", time.Since(start).Round(10*time.Millisecond))
		for _, o := range rs {
			if o == c {
				continue
			}
			o.must(t, http.MethodPost, "/api/v1/servers", fixture("on-"+strings.ToLower(o.name), 1, "0s"), http.StatusCreated)
			if code, _ := o.api(t, http.MethodGet, "/api/v1/servers/diverged", nil); code != http.StatusNotFound {
				t.Errorf("%s reads C's refused server: %d", o.name, code)
			}
		}
	})
}

// teamKey is the secret key the replicas share.
var teamKey = secretkey.Encode(secretkey.New())

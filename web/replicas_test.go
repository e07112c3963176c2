package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store/etcd"
	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
)

// replicas starts n applications on one etcd prefix, each with its own
// coordinator (a 2 s lease), as a team's replicas behind a load balancer
// are.
func replicas(t *testing.T, n int) []*env {
	t.Helper()
	srv, err := etcdtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	prefix := "/" + strings.ReplaceAll(t.Name(), "/", "-") + "/"
	out := make([]*env, n)
	for i := range out {
		db, err := etcd.Open(context.Background(), etcd.Options{Endpoints: []string{srv.Endpoint}, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		coord, err := etcd.NewCoordinator(db, 2)
		if err != nil {
			db.Close()
			t.Fatal(err)
		}
		out[i] = newEnvOn(t, db, func(c *webConfig) { c.Cluster = coord })
		t.Cleanup(func() { coord.Close() }) // before the app and its store close
	}
	return out
}

// Three replicas on etcd are one Switchboard: a server added on A shows
// live on B's tab; Verify pressed on A and B at once runs one
// verification, whose progress B's tab sees while A runs it; every
// replica then reads the same result.
func TestReplicasShareCatalogAndVerifications(t *testing.T) {
	rs := replicas(t, 3)
	a, b, c := rs[0], rs[1], rs[2]
	srvB, clientB := b.liveServer()
	tabB := b.login().openEvents(srvB, clientB)

	t.Run("one replica leads", func(t *testing.T) {
		waitFor(t, 10*time.Second, "a leader", func() bool {
			leaders := 0
			for _, r := range rs {
				rec := r.serve(newRequest(http.MethodGet, "/healthz", nil))
				if h := decodeAs[map[string]any](t, rec); h["leader"] == true {
					leaders++
				}
			}
			return leaders == 1
		})
	})

	t.Run("every replica is listed on each, with who leads", func(t *testing.T) {
		type listed struct {
			Replicas []struct {
				ID       string `json:"id"`
				Self     bool   `json:"self"`
				Leader   bool   `json:"leader"`
				Revision string `json:"revision"`
			} `json:"replicas"`
		}
		for _, r := range rs {
			var got listed
			waitFor(t, 15*time.Second, "three replicas listed", func() bool {
				json.Unmarshal(r.in(t).api(http.MethodGet, "/api/v1/replicas", nil).Body.Bytes(), &got)
				return len(got.Replicas) == 3
			})
			leaders, selves := 0, 0
			for _, x := range got.Replicas {
				if x.Leader {
					leaders++
				}
				if x.Self {
					selves++
				}
				if x.Revision == "" {
					t.Errorf("a replica lists %s with no revision", x.ID)
				}
			}
			if leaders != 1 || selves != 1 {
				t.Errorf("replica lists %+v; want one leader and itself once", got.Replicas)
			}
		}
		// The Replicas page shows the same, and this replica's readiness.
		page := a.loginWithToken().get("/replicas")
		body := page.Body.String()
		if page.Code != http.StatusOK || strings.Count(body, `data-testid="replica-row"`) != 3 || strings.Count(body, `data-leader="true"`) != 1 ||
			strings.Count(body, `data-testid="replica-self"`) != 1 {
			t.Errorf("the Replicas page = %d, %d rows, %d leaders; want three rows, one leader, itself marked", page.Code,
				strings.Count(body, `data-testid="replica-row"`), strings.Count(body, `data-leader="true"`))
		}
		for _, check := range []string{"store", "cluster"} {
			if !strings.Contains(body, `<strong>`+check+`</strong>`) {
				t.Errorf("the Replicas page lacks the %s readiness check", check)
			}
		}
		if !strings.Contains(body, "This replica is ready") {
			t.Errorf("the Replicas page does not say the replica is ready")
		}
	})

	t.Run("a server added on A shows on B's tab", func(t *testing.T) {
		s := fixtureServer("slow")
		s["args"] = []string{"-tools", "3", "-startup-delay", "1500ms"}
		a.in(t).createServer(s)
		tabB.until(t, 10*time.Second, "the servers list changing on B", func(ev sseEvent) bool { return ev.name == "servers" })
		if got := c.in(t).server("slow"); got.Name != "Fixture slow" {
			t.Errorf("C reads %+v", got)
		}
	})

	t.Run("Verify on A and B at once runs once, and B's tab follows it", func(t *testing.T) {
		var wg sync.WaitGroup
		jobs := make([]apiJob, 2)
		for i, r := range []*env{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := r.in(t).api(http.MethodPost, "/api/v1/servers/slow/verify", confirmed)
				if rec.Code != http.StatusAccepted {
					t.Errorf("verify on replica %d = %d %s", i, rec.Code, rec.Body)
					return
				}
				jobs[i] = decodeAs[jobAnswer](t, rec).Job
			}()
		}
		wg.Wait()
		// B's tab sees the server's status change while the verification
		// runs, wherever it runs.
		tabB.until(t, 10*time.Second, "the status of slow while it verifies", func(ev sseEvent) bool {
			return strings.HasPrefix(ev.name, "status-") && strings.Contains(ev.text(), "erif") // Verifying…
		})
		waitFor(t, 20*time.Second, "the verification's end", func() bool { return c.in(t).discovery("slow").Status == "success" })
		if h := a.in(t).history("slow"); len(h) != 1 {
			t.Errorf("history after Verify on two replicas = %d entries; want one verification", len(h))
		}
		for i, r := range rs {
			if got := r.in(t).discovery("slow"); got.Status != "success" || got.ToolCount != 3 {
				t.Errorf("replica %d reads %+v", i, got)
			}
		}
		if jobs[0].ID == "" || jobs[0].ID != jobs[1].ID {
			t.Errorf("A and B answered jobs %q and %q; want the one job", jobs[0].ID, jobs[1].ID)
		}
	})

	t.Run("a verification running on A is cancelled from B", func(t *testing.T) {
		s := fixtureServer("long")
		s["args"] = []string{"-tools", "1", "-startup-delay", "30s"}
		a.in(t).createServer(s)
		rec := a.in(t).api(http.MethodPost, "/api/v1/servers/long/verify", confirmed)
		wantStatus(t, rec, http.StatusAccepted)
		id := decodeAs[jobAnswer](t, rec).Job.ID
		waitFor(t, 5*time.Second, "B knowing A's job", func() bool {
			return b.in(t).api(http.MethodGet, "/api/v1/jobs/"+id, nil).Code == http.StatusOK
		})
		wantStatus(t, b.in(t).api(http.MethodPost, "/api/v1/jobs/"+id+"/cancel", nil), http.StatusAccepted)
		waitFor(t, 10*time.Second, "the job cancelled on A", func() bool {
			return a.in(t).discovery("long").Status == "cancelled"
		})
	})

	t.Run("an ask call through C's /mcp is approved on A's tab", func(t *testing.T) {
		b.in(t).setPolicy("slow", "tool_000", "ask")
		srvA, clientA := a.liveServer()
		browserA := a.login()
		tabA := browserA.openEvents(srvA, clientA)
		srvC, _ := c.liveServer()
		agent := mcptest.Connect(t, srvC.URL, testMCPToken)
		done := make(chan error, 1)
		go func() {
			res, err := agent.Call("slow__tool_000", map[string]any{"q": "from C"})
			if err == nil && !strings.HasPrefix(mcptest.Text(res), "tool_000 ") {
				err = fmt.Errorf("result %q", mcptest.Text(res))
			}
			done <- err
		}()
		var card sseEvent
		tabA.until(t, 15*time.Second, "C's waiting call as a card on A", func(ev sseEvent) bool {
			card = ev
			return ev.name == "approvals" && strings.Contains(ev.text(), "tool_000")
		})
		id := between(card.text(), `data-approval="`, `"`)
		wantStatus(t, browserA.htmx(http.MethodPost, "/approvals/"+id, url.Values{"decision": {"allow_once"}}), http.StatusNoContent)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the call approved on another replica = %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the call approved on A is still waiting on C")
		}
		if got := a.in(t).waitCall(1); got.Decision != "approved" || got.DecidedBy != "dashboard" {
			t.Errorf("the call log (shared) says %+v", got)
		}
	})

	t.Run("two people answering one call on A and B: one wins, the other is told who", func(t *testing.T) {
		tokens := map[string]string{}
		for _, who := range []string{"ann", "bob"} {
			rec := a.in(t).api(http.MethodPost, "/api/v1/users", map[string]any{"email": who + "@example.com", "role": "approver"})
			wantStatus(t, rec, http.StatusCreated)
			var made struct {
				Token string `json:"token"`
			}
			json.Unmarshal(rec.Body.Bytes(), &made)
			tokens[who] = made.Token
			a.secrets = append(a.secrets, made.Token)
		}
		srvC, _ := c.liveServer()
		agent := mcptest.Connect(t, srvC.URL, testMCPToken)
		done := make(chan error, 1)
		go func() {
			_, err := agent.Call("slow__tool_000", map[string]any{"q": "raced"})
			done <- err
		}()
		var id string
		for _, r := range []*env{a, b} {
			waitFor(t, 15*time.Second, "the waiting call on both replicas", func() bool {
				var list struct {
					Approvals []struct{ ID, Tool string } `json:"approvals"`
				}
				json.Unmarshal(r.in(t).apiWith(tokens["ann"], http.MethodGet, "/api/v1/approvals", "").Body.Bytes(), &list)
				for _, ap := range list.Approvals {
					if ap.Tool == "tool_000" {
						id = ap.ID
						return true
					}
				}
				return false
			})
		}
		type answer struct {
			code int
			body string
		}
		answers := make([]answer, 2)
		var wg sync.WaitGroup
		for i, who := range []string{"ann", "bob"} {
			r := []*env{a, b}[i]
			wg.Go(func() {
				rec := r.in(t).apiWith(tokens[who], http.MethodPost, "/api/v1/approvals/"+id, `{"decision": "allow_once"}`)
				answers[i] = answer{rec.Code, rec.Body.String()}
			})
		}
		wg.Wait()
		winner, loser := -1, -1
		for i, ans := range answers {
			switch ans.code {
			case http.StatusOK:
				winner = i
			case http.StatusConflict:
				loser = i
			}
		}
		if winner < 0 || loser < 0 {
			t.Fatalf("answers %+v; want one 200 and one 409", answers)
		}
		names := []string{"ann@example.com", "bob@example.com"}
		if !strings.Contains(answers[loser].body, names[winner]+" answered this call first") {
			t.Errorf("the refused answer says %s; want it to name %s", answers[loser].body, names[winner])
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the raced call = %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the raced call is still waiting")
		}
		if got := a.in(t).waitCall(2); got.DecidedBy != names[winner] {
			t.Errorf("the call log says decided by %q; want %s", got.DecidedBy, names[winner])
		}
	})
}

// A replica cut off from etcd changes nothing, and says why: 503 within
// its request timeout, not a half-written change nor one kept aside to
// diverge; the other replica goes on.
func TestReplicaCutOffFromETCDRefusesChanges(t *testing.T) {
	srv, err := etcdtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	proxy, err := srv.NewProxy()
	if err != nil {
		t.Fatal(err)
	}
	cut, other := replicaAt(t, proxy.Endpoint, "/cut/"), replicaAt(t, srv.Endpoint, "/cut/")
	cut.createServer(fixtureServer("before"))
	waitFor(t, 10*time.Second, "both replicas ready", func() bool {
		return cut.serve(newRequest(http.MethodGet, "/readyz", nil)).Code == http.StatusOK &&
			other.serve(newRequest(http.MethodGet, "/readyz", nil)).Code == http.StatusOK
	})
	proxy.Cut()
	start := time.Now()
	rec := cut.api(http.MethodPost, "/api/v1/servers", fixtureServer("after"))
	wantStatus(t, rec, http.StatusServiceUnavailable)
	if body := rec.Body.String(); !strings.Contains(body, "cannot reach its store") || !strings.Contains(body, "nothing was read or changed") {
		t.Errorf("answer = %s", body)
	}
	t.Logf("refused after %s", time.Since(start))
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refused after %s; want within the request timeout", took)
	}
	other.createServer(fixtureServer("elsewhere"))
	if got := other.server("before"); got.Name != "Fixture before" {
		t.Errorf("the other replica reads %+v", got)
	}
	wantStatus(t, other.api(http.MethodGet, "/api/v1/servers/after", nil), http.StatusNotFound)
	// Readiness tells the truth (issue 38: /healthz said "ok" for a
	// replica answering 503): the cut replica is not ready, on /readyz
	// and /healthz alike, and says why; it is alive; the other is ready.
	for _, path := range []string{"/readyz", "/healthz"} {
		rec := cut.serve(newRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "unavailable") {
			t.Errorf("%s of the cut replica = %d %s; want 503 saying why", path, rec.Code, rec.Body.String())
		}
	}
	wantStatus(t, cut.serve(newRequest(http.MethodGet, "/livez", nil)), http.StatusOK)
	wantStatus(t, other.serve(newRequest(http.MethodGet, "/readyz", nil)), http.StatusOK)
	cut.logs.ForgetErrors() // the refusal is logged as the error it is
}

// A replica cut off from etcd that still runs an allowed call keeps its
// record on disk (the audit spool beside its database) and writes it
// once etcd is back: no call goes unaudited (issue 38: the batch was
// dropped for good).
func TestACutOffReplicasCallsAreAuditedWhenItIsBack(t *testing.T) {
	srv, err := etcdtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	proxy, err := srv.NewProxy()
	if err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(t.TempDir(), "sb.db.audit-spool")
	cut := replicaAt(t, proxy.Endpoint, "/spool/", func(c *webConfig) { c.MCP.AuditSpool = spool })
	other := replicaAt(t, srv.Endpoint, "/spool/")
	cut.verifyFixture("fx", "-tools", "1")
	cut.setPolicy("fx", "tool_000", "allow")
	srvCut, _ := cut.liveServer()
	agent := mcptest.Connect(t, srvCut.URL, testMCPToken)
	if _, err := agent.Call("fx__tool_000", map[string]any{"before": true}); err != nil {
		t.Fatal(err)
	}
	other.waitCalls(1)

	proxy.Cut()
	if err := mcptest.Refused(agent.Call("fx__tool_000", map[string]any{"while": "cut off"})); err != nil {
		t.Fatalf("the allowed call on the cut-off replica = %v", err)
	}
	waitFor(t, 20*time.Second, "the call's record in the spool", func() bool {
		b, _ := os.ReadFile(spool)
		return bytes.Contains(b, []byte("fx__tool_000"))
	})
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Cut) // its connections end with the test
	waitFor(t, 30*time.Second, "the spooled record in the shared call log", func() bool {
		return len(other.calls()) == 2
	})
	waitFor(t, 10*time.Second, "the spool emptied", func() bool {
		_, err := os.Stat(spool)
		return os.IsNotExist(err)
	})
	cut.logs.ForgetErrors() // the failed writes are logged as the errors they are
}

// replicaAt is a replica on the etcd member at endpoint, under prefix,
// with a 1 s request deadline and a 2 s lease.
func replicaAt(t *testing.T, endpoint, prefix string, opts ...appOption) *env {
	t.Helper()
	db, err := etcd.Open(context.Background(), etcd.Options{Endpoints: []string{endpoint}, Prefix: prefix, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	coord, err := etcd.NewCoordinator(db, 2)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, db, append(opts, func(c *webConfig) { c.Cluster = coord })...)
	t.Cleanup(func() { coord.Close() })
	return e
}

package web_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

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
		t.Logf("jobs answered: %+v", jobs)
	})
}

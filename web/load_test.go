package web_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestDashboardAnswersDuringHostileVerifications: while 20 verifications
// of servers that never answer run at once, pages and API requests still
// complete quickly — nothing they need is held by a running job (no
// head-of-line blocking on the store, the runner or the SSE hub).
func TestDashboardAnswersDuringHostileVerifications(t *testing.T) {
	const n = 20
	e := newEnv(t, func(c *webConfig) { c.Concurrency = n })
	b := e.login()
	for i := range n {
		body := fixtureServer(fmt.Sprintf("hostile-%02d", i))
		body["args"] = []string{"-mode", "hang-init"}
		body["timeout_ms"] = 5000
		e.createServer(body)
	}
	e.createServer(fixtureServer("good"))
	e.verify("good")

	var jobs []string
	for i := range n {
		rec := e.api(http.MethodPost, fmt.Sprintf("/api/v1/servers/hostile-%02d/verify", i), confirmed)
		wantStatus(t, rec, http.StatusAccepted)
		jobs = append(jobs, decodeAs[jobAnswer](t, rec).Job.ID)
	}
	// All of them are past the queue, in the handshake that never ends.
	deadline := time.Now().Add(10 * time.Second)
	for running := 0; running < n; {
		running = 0
		for _, id := range jobs {
			if e.job(id).Phase == "initializing" {
				running++
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d verifications reached initializing", running, n)
		}
		time.Sleep(20 * time.Millisecond)
	}

	var took []time.Duration
	for round := range 10 {
		for _, req := range []struct {
			name string
			do   func() int
		}{
			{"servers page", func() int { return b.get("/").Code }},
			{"detail page", func() int { return b.get("/servers/good").Code }},
			{"tools fragment", func() int { return b.get("/servers/good/tools").Code }},
			{"API servers", func() int { return e.api(http.MethodGet, "/api/v1/servers", nil).Code }},
			{"API catalog", func() int { return e.api(http.MethodGet, "/api/v1/tools", nil).Code }},
			{"API policy", func() int {
				return e.api(http.MethodPut, "/api/v1/servers/good/tools/tool_001/policy", map[string]string{"policy": []string{"allow", "deny"}[round%2]}).Code
			}},
		} {
			t0 := time.Now()
			code := req.do()
			d := time.Since(t0)
			took = append(took, d)
			if code != http.StatusOK {
				t.Errorf("%s: status %d", req.name, code)
			}
			// Generous: a request normally takes well under 10 ms; a
			// request waiting on a hung job would take seconds.
			if d > time.Second {
				t.Errorf("%s took %v while %d verifications hang", req.name, d, n)
			}
		}
	}
	slices.Sort(took)
	t.Logf("%d requests during %d hanging verifications: p50 %v, max %v", len(took), n, took[len(took)/2], took[len(took)-1])

	// They are still hanging: the requests did not wait for them.
	for _, id := range jobs {
		if job := e.job(id); job.FinishedAt != nil {
			t.Fatalf("job %s finished early: %+v", id, job)
		}
	}
}

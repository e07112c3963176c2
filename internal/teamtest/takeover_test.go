package teamtest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// apiJob is a job as GET /api/v1/jobs/{id} answers it.
type apiJob struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Trigger string `json:"trigger"`
	Error   *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// verify asks r to verify the server and answers its job.
func (r *replica) verify(t *testing.T, id string) apiJob {
	t.Helper()
	var a struct{ Job apiJob }
	json.Unmarshal(r.must(t, http.MethodPost, "/api/v1/servers/"+id+"/verify", map[string]any{"confirm": true}, http.StatusAccepted), &a)
	if a.Job.ID == "" {
		t.Fatalf("verify %s on %s answered no job", id, r.name)
	}
	return a.Job
}

// job is r's answer for the job (ok false if r knows none).
func (r *replica) job(t *testing.T, id string) (apiJob, bool) {
	t.Helper()
	code, body := r.api(t, http.MethodGet, "/api/v1/jobs/"+id, nil)
	if code != http.StatusOK {
		return apiJob{}, false
	}
	var a struct{ Job apiJob }
	json.Unmarshal(body, &a)
	return a.Job, true
}

// discovery is the server's verification record as r reads it.
func (r *replica) discovery(t *testing.T, id string) (status, jobID string) {
	t.Helper()
	var s struct {
		Discovery struct {
			Status string `json:"status"`
			JobID  string `json:"job_id"`
		} `json:"discovery"`
	}
	json.Unmarshal(r.must(t, http.MethodGet, "/api/v1/servers/"+id, nil, http.StatusOK), &s)
	return s.Discovery.Status, s.Discovery.JobID
}

// A verification whose replica dies, or is cut off from etcd, in the
// middle is neither lost nor left "running" (issue 38: 3 of 63
// acknowledged jobs vanished with their replica, and others answered with
// the dead job for 20 s): the other replicas say it failed and why once
// its claim ends, one of them verifies the server again, and the cut-off
// replica, which stops its job before its lease can expire, cannot
// overwrite that record when it is back (its writes are fenced).
func TestAVerificationOutlivesItsReplica(t *testing.T) {
	etcd := startCluster(t)
	proxies, viaProxies := etcd.proxies(t)
	a, b := startReplica(t, "A", etcd.clients), startReplica(t, "B", etcd.clients)
	c := startReplica(t, "C", viaProxies)

	// followed checks that the job's replica's end is told by b, then
	// that b's record of the server is a new, successful verification.
	followed := func(t *testing.T, server string, dead apiJob, since time.Time) {
		t.Helper()
		var told apiJob
		waitFor(t, 30*time.Second, "B telling the dead job failed", func() bool {
			j, ok := b.job(t, dead.ID)
			told = j
			return ok && j.Status == "failed"
		})
		if told.Error == nil || !strings.Contains(told.Error.Message, "stopped") {
			t.Errorf("the dead job on B = %+v; want failed, saying its replica stopped", told)
		}
		t.Logf("B told %s failed %s after its replica went", dead.ID, time.Since(since).Round(10*time.Millisecond))
		waitFor(t, 60*time.Second, "the server verified again", func() bool {
			status, jobID := b.discovery(t, server)
			return status == "success" && jobID != dead.ID
		})
		h := b.history(t, server)
		if len(h) == 0 || h[0].Trigger != "takeover" {
			t.Errorf("history = %+v; want a takeover verification first", h)
		}
		t.Logf("verified again %s after its replica went", time.Since(since).Round(10*time.Millisecond))
	}

	t.Run("its replica dies", func(t *testing.T) {
		a.must(t, http.MethodPost, "/api/v1/servers", fixture("orphan", 2, "4s"), http.StatusCreated)
		dead := a.verify(t, "orphan")
		waitFor(t, 10*time.Second, "B knowing A's job", func() bool { j, ok := b.job(t, dead.ID); return ok && j.Status == "running" })
		killed := time.Now()
		a.p.kill()
		followed(t, "orphan", dead, killed)
	})

	t.Run("its replica is cut off from etcd, then comes back", func(t *testing.T) {
		b.must(t, http.MethodPost, "/api/v1/servers", fixture("cut", 2, "4s"), http.StatusCreated)
		lost := c.verify(t, "cut")
		waitFor(t, 10*time.Second, "B knowing C's job", func() bool { j, ok := b.job(t, lost.ID); return ok && j.Status == "running" })
		held := time.Now()
		for _, p := range proxies {
			p.Hold()
		}
		// C stops its job before its lease can expire (its API cannot
		// answer meanwhile: it cannot read etcd to authenticate).
		waitFor(t, 20*time.Second, "C stopping its job", func() bool {
			return strings.Contains(c.p.stderr.String()+c.p.stdout.String(), "lost its claim on a server's verification")
		})
		t.Logf("C stopped its job %s after it was cut off", time.Since(held).Round(10*time.Millisecond))
		followed(t, "cut", lost, held)
		_, again := b.discovery(t, "cut")
		for _, p := range proxies {
			p.Release()
		}
		// C back: whatever it still had to write of its job is refused.
		time.Sleep(3 * time.Second)
		if status, jobID := b.discovery(t, "cut"); status != "success" || jobID != again {
			t.Errorf("after C came back the record is %s of %s; want B's success of %s", status, jobID, again)
		}
		// It ended saying what happened on etcd: no "database file"
		// (issue 38: what C said about a store it could not reach).
		if j, _ := c.job(t, lost.ID); j.Status != "failed" || j.Error == nil ||
			!(strings.Contains(j.Error.Message, "could not be reached") || strings.Contains(j.Error.Message, "lost etcd")) {
			t.Errorf("C's job = %+v; want it failed, saying it could not reach etcd or lost its claim", j)
		}
		if !strings.Contains(c.p.stderr.String()+c.p.stdout.String(), "gives up its claims before the lease can expire") {
			t.Errorf("C's log does not say it gave up its claims before its lease could expire")
		}
	})
}

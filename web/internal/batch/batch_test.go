package batch

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/views"
)

func TestProgress(t *testing.T) {
	var r Recent
	if r.Latest() != nil {
		t.Fatal("Latest of no batch is not nil")
	}
	b := &Batch{ID: "b1", Jobs: []Job{{ServerID: "a", JobID: "j1", Status: discovery.JobQueued}, {ServerID: "b", JobID: "j2", Status: discovery.JobQueued}},
		Skipped: []views.Skipped{{ServerID: "c", Reason: "disabled"}}}
	// j1 moved on between its submission and Add.
	r.Add(b, func(id string) (discovery.Job, bool) {
		return discovery.Job{ID: id, Status: discovery.JobRunning}, id == "j1"
	})
	if diff := cmp.Diff(&views.BatchView{Total: 2, Running: 1, Queued: 1, Skipped: b.Skipped}, r.Latest()); diff != "" {
		t.Errorf("after Add (-want +got):\n%s", diff)
	}
	v, ok := r.Update(discovery.Job{ID: "j2", Status: discovery.JobFailed})
	if !ok || v.Failed != 1 || v.Running != 1 {
		t.Errorf("Update(j2 failed) = %+v, %v; want one running, one failed, in the newest batch", v, ok)
	}
	if _, ok := r.Update(discovery.Job{ID: "elsewhere", Status: discovery.JobSuccess}); ok {
		t.Error("a job of no batch was reported as in the newest one")
	}
	got, ok := r.Get("b1")
	if !ok || got.Jobs[1].Status != discovery.JobFailed {
		t.Fatalf("Get(b1) = %+v, %v", got, ok)
	}
	got.Jobs[0].Status = "tampered"
	if again, _ := r.Get("b1"); again.Jobs[0].Status != discovery.JobRunning {
		t.Error("Get returned the batch itself, not a copy")
	}
}

func TestKeepsTheLatest(t *testing.T) {
	var r Recent
	none := func(string) (discovery.Job, bool) { return discovery.Job{}, false }
	for i := range Kept + 5 {
		r.Add(&Batch{ID: strconv.Itoa(i)}, none)
	}
	for i := range Kept + 5 {
		if _, ok := r.Get(strconv.Itoa(i)); ok != (i >= 5) {
			t.Errorf("batch %d kept = %v; want %v (the latest %d)", i, ok, i >= 5, Kept)
		}
	}
}

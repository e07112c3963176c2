package batch

import (
	"strconv"
	"testing"
	"time"

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
	if diff := cmp.Diff(&views.BatchView{ID: "b1", Total: 2, Running: 1, Queued: 1, Skipped: b.Skipped}, r.Latest()); diff != "" {
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

// Cancel names the jobs still queued or running and marks the batch;
// cancelled jobs count apart from failed ones; Dismiss marks the batch,
// whose jobs go on.
func TestCancelAndDismiss(t *testing.T) {
	var r Recent
	none := func(string) (discovery.Job, bool) { return discovery.Job{}, false }
	r.Add(&Batch{ID: "b1", Jobs: []Job{
		{ServerID: "a", JobID: "j1", Status: discovery.JobSuccess},
		{ServerID: "b", JobID: "j2", Status: discovery.JobRunning},
		{ServerID: "c", JobID: "j3", Status: discovery.JobQueued},
	}}, none)
	if _, ok := r.Cancel("nope"); ok {
		t.Error("Cancel(unknown batch) = ok")
	}
	jobs, ok := r.Cancel("b1")
	if !ok || len(jobs) != 2 || jobs[0] != "j2" || jobs[1] != "j3" {
		t.Fatalf("Cancel(b1) = %q, %v; want j2, j3", jobs, ok)
	}
	r.Update(discovery.Job{ID: "j2", Status: discovery.JobCancelled})
	v, _ := r.Update(discovery.Job{ID: "j3", Status: discovery.JobCancelled})
	if want := (views.BatchView{ID: "b1", Total: 3, Succeeded: 1, Cancelled: 2, Stopped: true}); !cmp.Equal(v, want) {
		t.Errorf("after the cancellations: %s", cmp.Diff(want, v))
	}
	if !v.Finished() || v.Done() != 3 {
		t.Errorf("Finished, Done = %v, %d; want true, 3", v.Finished(), v.Done())
	}
	if r.Dismiss("nope") || !r.Dismiss("b1") || !r.Latest().Dismissed {
		t.Error("Dismiss does not mark the batch, or accepts an unknown one")
	}
	b, _ := r.Get("b1")
	if bv := b.View(); bv.Cancelled != 2 || bv.Failed != 0 || !b.Cancelled || !bv.Finished() || len(b.Jobs) != 3 {
		t.Errorf("the stored batch: %+v, view %+v", b, bv)
	}
}

// A batch that ended is shown on pages loaded within Linger of its end,
// and is no leftover panel on pages loaded later; one still running is
// shown however old (issue 37 #10).
func TestAnEndedBatchIsNoLeftover(t *testing.T) {
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	r := Recent{Now: func() time.Time { return now }}
	none := func(string) (discovery.Job, bool) { return discovery.Job{}, false }
	r.Add(&Batch{ID: "b", Jobs: []Job{{JobID: "j1", Status: discovery.JobRunning}, {JobID: "j2", Status: discovery.JobQueued}}}, none)
	now = now.Add(time.Hour)
	if r.Latest() == nil {
		t.Fatal("a batch still running is not shown")
	}
	r.Update(discovery.Job{ID: "j1", Status: discovery.JobSuccess})
	r.Update(discovery.Job{ID: "j2", Status: discovery.JobFailed})
	now = now.Add(Linger - time.Second)
	if v := r.Latest(); v == nil || !v.Finished() {
		t.Fatalf("within Linger of its end: %+v; want the finished batch", v)
	}
	now = now.Add(2 * time.Second)
	if v := r.Latest(); v != nil {
		t.Errorf("past Linger: %+v; want no leftover panel", v)
	}
	// A new batch shows again.
	r.Add(&Batch{ID: "c", Jobs: []Job{{JobID: "j3", Status: discovery.JobQueued}}}, none)
	if v := r.Latest(); v == nil || v.ID != "c" {
		t.Errorf("a new batch: %+v", v)
	}
}

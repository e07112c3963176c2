package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// annotated is mkTool with annotations in the tool object (and so in its
// pin).
func annotated(name, version, annotations string) store.Tool {
	raw, err := json.Marshal(map[string]any{
		"name": name, "description": name + " " + version,
		"inputSchema": map[string]any{"type": "object"},
		"annotations": json.RawMessage(annotations),
	})
	if err != nil {
		panic(err)
	}
	tool := MkTool(name, version)
	tool.Raw, tool.Annotations = raw, json.RawMessage(annotations)
	sum := sha256.Sum256(raw)
	tool.Pin = hex.EncodeToString(sum[:])
	return tool
}

// A new tool's policy is the server default raised by its annotations; a
// tool that returns keeps the policy it had, however it is annotated now.
func testNewToolPolicyFollowsAnnotations(t *testing.T, be Backend) {
	db := be.Open(t)
	in := StdioServer("files")
	in.DefaultPolicy = store.PolicyAllow
	s := MustCreate(t, db, in)
	safe := annotated("read", "v1", `{"readOnlyHint":true,"openWorldHint":false}`)
	risky := annotated("rm", "v1", `{"destructiveHint":true,"openWorldHint":false}`)
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(10), safe, risky))
	got := MustTools(t, db, s.ID)
	if p := got["read"].Policy; p.Policy != store.PolicyAllow || p.SetBy != store.PolicySetByDefault {
		t.Errorf("read-only, closed-world tool on an allow server: policy %+v; want allow by default", p)
	}
	if p := got["rm"].Policy; p.Policy != store.PolicyAsk || p.Reason == "" {
		t.Errorf("destructive tool on an allow server: policy %+v; want ask with a reason", p)
	}
}

func testHistoryAndDelta(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	read1, read2, write, list := MkTool("read", "v1"), MkTool("read", "v2"), MkTool("write", "v1"), MkTool("list", "v1")

	steps := []struct {
		tools []store.Tool
		want  store.Delta
		text  string
	}{
		{[]store.Tool{read1, write}, store.Delta{Added: 2, AddedNames: []string{"read", "write"}}, "+2"},
		{[]store.Tool{read1, write}, store.Delta{}, "no changes"},
		{[]store.Tool{read2, list}, store.Delta{Added: 1, Removed: 1, Changed: 1, AddedNames: []string{"list"}, RemovedNames: []string{"write"}, ChangedNames: []string{"read"}}, "+1 −1 ~1"},
		// write is back (unchanged: active with its policy), read back at v1.
		{[]store.Tool{read1, write, list}, store.Delta{Added: 1, Changed: 1, AddedNames: []string{"write"}, ChangedNames: []string{"read"}}, "+1 ~1"},
	}
	for i, step := range steps {
		v := Verification(s, "job-"+string(rune('a'+i)), At(10*(i+1)), step.tools...)
		v.Trigger = "manual"
		v.ServerVersion = "1." + string(rune('0'+i))
		MustRecordSuccess(t, db, s.ID, v)
		h, err := db.JobHistory(ctx, s.ID, v.JobID)
		if err != nil || h.Delta == nil || !reflect.DeepEqual(*h.Delta, step.want) || h.Delta.String() != step.text {
			t.Errorf("step %d: history delta = %+v, %v; want %+v (%q)", i, h.Delta, err, step.want, step.text)
		}
		// The record keeps the counts only.
		if d := MustSummary(t, db, s.ID).Discovery; d.Delta == nil || !reflect.DeepEqual(d.Delta, step.want.Counts()) {
			t.Errorf("step %d: Discovery.Delta = %+v; want the counts %+v", i, d.Delta, step.want.Counts())
		}
	}
	if e := MustTools(t, db, s.ID)["write"]; e.State != store.ToolActive {
		t.Errorf("write after returning unchanged: state %s; want active", e.State)
	}
	if err := db.RecordFailure(ctx, s.ID, Failure(s, "job-fail", store.StatusTimeout, At(60))); err != nil {
		t.Fatal(err)
	}
	changed := s
	changed.Args = []string{"other"}
	if err := db.UpdateServer(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordSuccess(ctx, s.ID, Verification(s, "job-late", At(70), read1)); !errors.Is(err, store.ErrConfigChanged) {
		t.Fatalf("RecordSuccess for the old config = %v; want ErrConfigChanged", err)
	}

	hist, total, err := db.History(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 6 || len(hist) != 6 {
		t.Fatalf("History = %d entries (total %d); want 6", len(hist), total)
	}
	if h := hist[0]; h.JobID != "job-late" || h.Outcome != store.OutcomeDiscarded || h.Error == nil || h.Delta != nil {
		t.Errorf("newest entry = %+v; want the discarded job-late with its reason", h)
	}
	if h := hist[1]; h.JobID != "job-fail" || h.Outcome != store.StatusTimeout || h.Error == nil || h.Error.Phase != "initialize" || h.Error.StderrTail != "" || h.DurationMS != 2000 {
		t.Errorf("entry 1 = %+v; want the timeout with class and phase, no stderr tail, 2000 ms", h)
	}
	if h := hist[2]; h.Outcome != store.StatusSuccess || h.Trigger != "manual" || h.ServerVersion != "1.3" || h.PreviousVersion != "1.2" || h.ToolCount != 3 || h.Delta.String() != "+1 ~1" {
		t.Errorf("entry 2 = %+v; want the last success with versions 1.2 → 1.3, 3 tools, +1 ~1", h)
	}
	if hist[0].Seq <= hist[1].Seq {
		t.Errorf("History order: seq %d before %d; want newest first", hist[0].Seq, hist[1].Seq)
	}
	if h, err := db.JobHistory(ctx, s.ID, "job-b"); err != nil || h.Delta == nil || !h.Delta.Empty() {
		t.Errorf("JobHistory(job-b) = %+v, %v; want the no-change success", h, err)
	}
	if _, err := db.JobHistory(ctx, s.ID, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("JobHistory(nope) = %v; want ErrNotFound", err)
	}
	if two, _, _ := db.History(ctx, s.ID, 2); len(two) != 2 || two[0].JobID != "job-late" {
		t.Errorf("History(limit 2) = %d entries; want the newest 2", len(two))
	}
	if _, _, err := db.History(ctx, "nope", 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("History(nope) = %v; want ErrNotFound", err)
	}
	if err := db.DeleteServer(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	MustCreate(t, db, StdioServer("files"))
	if hist, total, _ := db.History(ctx, s.ID, 0); len(hist) != 0 || total != 0 {
		t.Errorf("History of a re-created server = %d entries; want none (deleted with the server)", len(hist))
	}
}

// The history keeps the newest HistoryKeep entries, and a delta lists at
// most store.DeltaNames names per kind with complete counts.
func testHistoryBounds(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("big"))
	var many []store.Tool
	for i := range 30 {
		many = append(many, MkTool(string(rune('a'+i/26))+string(rune('a'+i%26)), "v1"))
	}
	MustRecordSuccess(t, db, s.ID, Verification(s, "first", At(1), many...))
	h, err := db.JobHistory(ctx, s.ID, "first")
	if err != nil {
		t.Fatal(err)
	}
	d := h.Delta
	if d.Added != 30 || len(d.AddedNames) != store.DeltaNames || d.AddedNames[0] != "aa" {
		t.Errorf("delta of 30 new tools = %d added, %d names from %q; want 30, %d names from aa", d.Added, len(d.AddedNames), d.AddedNames[0], store.DeltaNames)
	}
	for i := range store.HistoryKeep + 5 {
		if err := db.RecordFailure(ctx, s.ID, Failure(s, "f"+time.Duration(i).String(), store.StatusFailed, At(10+i))); err != nil {
			t.Fatal(err)
		}
	}
	hist, total, err := db.History(ctx, s.ID, 0)
	if err != nil || total != store.HistoryKeep || len(hist) != store.HistoryKeep {
		t.Fatalf("History after %d entries = %d (total %d), %v; want %d", store.HistoryKeep+6, len(hist), total, err, store.HistoryKeep)
	}
	if hist[len(hist)-1].JobID != "f5ns" {
		t.Errorf("oldest kept = %s; want f5ns (the first six dropped)", hist[len(hist)-1].JobID)
	}
}

// ApproveChanges approves all the shown versions, or none.
func testApproveChanges(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	a1, a2, b1, b2, c1 := MkTool("a", "v1"), MkTool("a", "v2"), MkTool("b", "v1"), MkTool("b", "v2"), MkTool("c", "v1")
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(10), a1, b1, c1))
	MustRecordSuccess(t, db, s.ID, Verification(s, "j2", At(20), a2, b2, c1))

	if _, err := db.ApproveChanges(ctx, s.ID, map[string]string{"a": a2.Pin, "b": b1.Pin}, "me"); !errors.Is(err, store.ErrPinMismatch) {
		t.Errorf("ApproveChanges with one stale pin = %v; want ErrPinMismatch", err)
	}
	if _, err := db.ApproveChanges(ctx, s.ID, map[string]string{"a": a2.Pin, "c": c1.Pin}, "me"); !errors.Is(err, store.ErrNotChanged) {
		t.Errorf("ApproveChanges with an unchanged tool = %v; want ErrNotChanged", err)
	}
	if _, err := db.ApproveChanges(ctx, s.ID, map[string]string{"a": a2.Pin, "zz": "x"}, "me"); !errors.Is(err, store.ErrToolNotFound) {
		t.Errorf("ApproveChanges with an unknown tool = %v; want ErrToolNotFound", err)
	}
	if got := MustTools(t, db, s.ID); got["a"].State != store.ToolChanged || got["b"].State != store.ToolChanged {
		t.Fatalf("after refused approvals: a %s, b %s; want both still changed", got["a"].State, got["b"].State)
	}
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 2 {
		t.Errorf("Discovery.Changed with two changed tools = %d; want 2", n)
	}
	out, err := db.ApproveChanges(ctx, s.ID, map[string]string{"a": a2.Pin, "b": b2.Pin}, "me")
	if err != nil || len(out) != 2 {
		t.Fatalf("ApproveChanges(a, b) = %d, %v; want 2, nil", len(out), err)
	}
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 0 {
		t.Errorf("Discovery.Changed after approving both = %d; want 0", n)
	}
	for _, e := range MustTools(t, db, s.ID) {
		if e.State != store.ToolActive || e.Effective != store.PolicyAsk || e.Policy.Pin != e.Pin {
			t.Errorf("%s after approval: state %s, effective %s, pin approved %v; want active, ask, true", e.Name, e.State, e.Effective, e.Policy.Pin == e.Pin)
		}
	}
}

// A verification of an old configuration that ends after the new
// configuration's success is discarded without touching the record.
func testLateDiscardKeepsNewerRecord(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	old := MustCreate(t, db, StdioServer("files"))
	if err := db.MarkRunning(ctx, old.ID, "old-job", At(1)); err != nil {
		t.Fatal(err)
	}
	edited := old
	edited.Args = []string{"--new"}
	if err := db.UpdateServer(ctx, edited); err != nil {
		t.Fatal(err)
	}
	edited, _ = db.Server(ctx, "files")
	if err := db.MarkRunning(ctx, old.ID, "new-job", At(2)); err != nil {
		t.Fatal(err)
	}
	MustRecordSuccess(t, db, old.ID, Verification(edited, "new-job", At(3), MkTool("a", "v1")))
	if err := db.RecordFailure(ctx, old.ID, Failure(old, "old-job", store.StatusCancelled, At(4))); !errors.Is(err, store.ErrConfigChanged) {
		t.Fatalf("late failure of the old configuration = %v; want ErrConfigChanged", err)
	}
	if d := MustSummary(t, db, old.ID).Discovery; d.Status != store.StatusSuccess || d.JobID != "new-job" || d.Error != nil {
		t.Errorf("record after the late discard = %s (job %s, error %v); want the new job's success", d.Status, d.JobID, d.Error)
	}
	if h, err := db.JobHistory(ctx, old.ID, "old-job"); err != nil || h.Outcome != store.OutcomeDiscarded {
		t.Errorf("old job's history = %+v, %v; want discarded", h, err)
	}
}

// A server's preset, kept with it, decides its new tools' policies; the
// reason is kept with each policy.
func testPresetDecidesNewTools(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	in := StdioServer("files")
	in.DefaultPolicy, in.Preset = store.PolicyDeny, store.PresetReadOnly
	s := MustCreate(t, db, in)
	if got, err := db.Server(ctx, s.ID); err != nil || got.Preset != store.PresetReadOnly {
		t.Fatalf("Server(%q) = %+v, %v; want its preset kept", s.ID, got.Preset, err)
	}
	// An edit that says nothing of the preset keeps it.
	edit := StdioServer("files")
	edit.Name = "Files, renamed"
	if err := db.UpdateServer(ctx, edit); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Server(ctx, s.ID); got.Preset != store.PresetReadOnly || got.Name != "Files, renamed" {
		t.Fatalf("after an edit without a preset: %q, %q; want the preset kept", got.Name, got.Preset)
	}
	safe := annotated("read", "v1", `{"readOnlyHint":true,"openWorldHint":false}`)
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(10), safe, MkTool("rm", "v1")))
	got := MustTools(t, db, s.ID)
	if p := got["read"].Policy; p.Policy != store.PolicyAllow || p.Reason != "allow: preset read-only (declared read-only and closed-world)" {
		t.Errorf("read-only, closed-world tool under the read-only preset: %+v", p)
	}
	if p := got["rm"].Policy; p.Policy != store.PolicyAsk || p.Reason != "ask: may be destructive (preset read-only)" {
		t.Errorf("unannotated tool under the read-only preset: %+v", p)
	}
}

// SetPolicies sets several tools' policies with their reasons, all or
// none.
func testSetPolicies(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(10), MkTool("read", "v1"), MkTool("write", "v1")))
	before := MustTools(t, db, s.ID)

	_, err := db.SetPolicies(ctx, s.ID, []store.PolicyChange{{Tool: "read", Policy: store.PolicyAllow}, {Tool: "nope", Policy: store.PolicyAllow}}, "dashboard")
	if !errors.Is(err, store.ErrToolNotFound) {
		t.Fatalf("SetPolicies with an unknown tool = %v; want ErrToolNotFound", err)
	}
	if got := MustTools(t, db, s.ID); !reflect.DeepEqual(got, before) {
		t.Errorf("after a failed SetPolicies: %+v; want nothing changed", got)
	}
	if _, err := db.SetPolicies(ctx, "nope", []store.PolicyChange{{Tool: "read", Policy: store.PolicyAllow}}, "dashboard"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPolicies of an unknown server = %v; want ErrNotFound", err)
	}

	out, err := db.SetPolicies(ctx, s.ID, []store.PolicyChange{
		{Tool: "write", Policy: store.PolicyDeny, Reason: "ask: preset ask for everything"},
		{Tool: "read", Policy: store.PolicyAllow},
	}, "dashboard")
	if err != nil || len(out) != 2 || out[0].Name != "write" || out[1].Name != "read" {
		t.Fatalf("SetPolicies = %+v, %v; want both, in order", out, err)
	}
	got := MustTools(t, db, s.ID)
	if p := got["write"].Policy; p.Policy != store.PolicyDeny || p.SetBy != "dashboard" || p.Reason != "ask: preset ask for everything" {
		t.Errorf("write's policy = %+v", p)
	}
	if p := got["read"].Policy; p.Policy != store.PolicyAllow || p.Reason != "" || got["read"].Effective != store.PolicyAllow {
		t.Errorf("read's policy = %+v, effective %s", p, got["read"].Effective)
	}
}

package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestInitialPolicy(t *testing.T) {
	tests := []struct {
		def, annotations string
		want             string
		raised           bool
	}{
		// No hints: the spec's defaults (destructive, open world) apply.
		{PolicyAllow, ``, PolicyAsk, true},
		{PolicyAllow, `{}`, PolicyAsk, true},
		{PolicyAllow, `not json`, PolicyAsk, true},
		{PolicyAllow, `{"readOnlyHint":true}`, PolicyAsk, true},                          // still open world
		{PolicyAllow, `{"destructiveHint":false}`, PolicyAsk, true},                      // still open world
		{PolicyAllow, `{"openWorldHint":false}`, PolicyAsk, true},                        // still destructive
		{PolicyAllow, `{"destructiveHint":true,"openWorldHint":false}`, PolicyAsk, true}, // destructive
		{PolicyAllow, `{"readOnlyHint":true,"openWorldHint":false}`, PolicyAllow, false},
		{PolicyAllow, `{"destructiveHint":false,"openWorldHint":false}`, PolicyAllow, false},
		{PolicyAllow, `{"readOnlyHint":true,"destructiveHint":true,"openWorldHint":false}`, PolicyAllow, false}, // read-only wins
		// Never looser than the server's default.
		{PolicyAsk, `{"readOnlyHint":true,"openWorldHint":false}`, PolicyAsk, false},
		{PolicyDeny, `{"readOnlyHint":true,"openWorldHint":false}`, PolicyDeny, false},
		{PolicyDeny, `{"destructiveHint":true}`, PolicyDeny, false},
		{PolicyAsk, `{"destructiveHint":true}`, PolicyAsk, false},
	}
	for _, tt := range tests {
		got, reason := initialPolicy(tt.def, json.RawMessage(tt.annotations))
		if got != tt.want {
			t.Errorf("initialPolicy(%s, %s) = %s (%s); want %s", tt.def, tt.annotations, got, reason, tt.want)
		}
		if raised := reason != "the server's default policy"; raised != tt.raised {
			t.Errorf("initialPolicy(%s, %s) reason = %q; want raised=%v", tt.def, tt.annotations, reason, tt.raised)
		}
	}
}

// annotated is mkTool with annotations in the tool object (and so in its
// pin).
func annotated(name, version, annotations string) Tool {
	raw, err := json.Marshal(map[string]any{
		"name": name, "description": name + " " + version,
		"inputSchema": map[string]any{"type": "object"},
		"annotations": json.RawMessage(annotations),
	})
	if err != nil {
		panic(err)
	}
	tool := mkTool(name, version)
	tool.Raw, tool.Annotations = raw, json.RawMessage(annotations)
	sum := sha256.Sum256(raw)
	tool.Pin = hex.EncodeToString(sum[:])
	return tool
}

// A new tool's policy is the server default raised by its annotations; a
// tool that returns keeps the policy it had, however it is annotated now.
func TestNewToolPolicyFollowsAnnotations(t *testing.T) {
	db := mustOpen(t)
	in := stdioServer("files")
	in.DefaultPolicy = PolicyAllow
	s := mustCreate(t, db, in)
	safe := annotated("read", "v1", `{"readOnlyHint":true,"openWorldHint":false}`)
	risky := annotated("rm", "v1", `{"destructiveHint":true,"openWorldHint":false}`)
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(10), safe, risky))
	got := mustTools(t, db, s.ID)
	if p := got["read"].Policy; p.Policy != PolicyAllow || p.SetBy != PolicySetByDefault {
		t.Errorf("read-only, closed-world tool on an allow server: policy %+v; want allow by default", p)
	}
	if p := got["rm"].Policy; p.Policy != PolicyAsk || p.Reason == "" {
		t.Errorf("destructive tool on an allow server: policy %+v; want ask with a reason", p)
	}
}

func TestHistoryAndDelta(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("files"))
	read1, read2, write, list := mkTool("read", "v1"), mkTool("read", "v2"), mkTool("write", "v1"), mkTool("list", "v1")

	steps := []struct {
		tools []Tool
		want  Delta
		text  string
	}{
		{[]Tool{read1, write}, Delta{Added: 2, AddedNames: []string{"read", "write"}}, "+2"},
		{[]Tool{read1, write}, Delta{}, "no changes"},
		{[]Tool{read2, list}, Delta{Added: 1, Removed: 1, Changed: 1, AddedNames: []string{"list"}, RemovedNames: []string{"write"}, ChangedNames: []string{"read"}}, "+1 −1 ~1"},
		// write is back (unchanged: active with its policy), read back at v1.
		{[]Tool{read1, write, list}, Delta{Added: 1, Changed: 1, AddedNames: []string{"write"}, ChangedNames: []string{"read"}}, "+1 ~1"},
	}
	for i, step := range steps {
		v := verification(s, "job-"+string(rune('a'+i)), at(10*(i+1)), step.tools...)
		v.Trigger = "manual"
		v.ServerVersion = "1." + string(rune('0'+i))
		mustRecordSuccess(t, db, s.ID, v)
		h, err := db.JobHistory(s.ID, v.JobID)
		if err != nil || h.Delta == nil || !reflect.DeepEqual(*h.Delta, step.want) || h.Delta.String() != step.text {
			t.Errorf("step %d: history delta = %+v, %v; want %+v (%q)", i, h.Delta, err, step.want, step.text)
		}
		// The record keeps the counts only.
		if d := mustSummary(t, db, s.ID).Discovery; d.Delta == nil || !reflect.DeepEqual(d.Delta, step.want.counts()) {
			t.Errorf("step %d: Discovery.Delta = %+v; want the counts %+v", i, d.Delta, step.want.counts())
		}
	}
	if e := mustTools(t, db, s.ID)["write"]; e.State != ToolActive {
		t.Errorf("write after returning unchanged: state %s; want active", e.State)
	}
	if err := db.RecordFailure(s.ID, failure(s, "job-fail", StatusTimeout, at(60))); err != nil {
		t.Fatal(err)
	}
	changed := s
	changed.Args = []string{"other"}
	if err := db.UpdateServer(changed); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordSuccess(s.ID, verification(s, "job-late", at(70), read1)); !errors.Is(err, ErrConfigChanged) {
		t.Fatalf("RecordSuccess for the old config = %v; want ErrConfigChanged", err)
	}

	hist, total, err := db.History(s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 6 || len(hist) != 6 {
		t.Fatalf("History = %d entries (total %d); want 6", len(hist), total)
	}
	if h := hist[0]; h.JobID != "job-late" || h.Outcome != OutcomeDiscarded || h.Error == nil || h.Delta != nil {
		t.Errorf("newest entry = %+v; want the discarded job-late with its reason", h)
	}
	if h := hist[1]; h.JobID != "job-fail" || h.Outcome != StatusTimeout || h.Error == nil || h.Error.Phase != "initialize" || h.Error.StderrTail != "" || h.DurationMS != 2000 {
		t.Errorf("entry 1 = %+v; want the timeout with class and phase, no stderr tail, 2000 ms", h)
	}
	if h := hist[2]; h.Outcome != StatusSuccess || h.Trigger != "manual" || h.ServerVersion != "1.3" || h.PreviousVersion != "1.2" || h.ToolCount != 3 || h.Delta.String() != "+1 ~1" {
		t.Errorf("entry 2 = %+v; want the last success with versions 1.2 → 1.3, 3 tools, +1 ~1", h)
	}
	if hist[0].Seq <= hist[1].Seq {
		t.Errorf("History order: seq %d before %d; want newest first", hist[0].Seq, hist[1].Seq)
	}
	if h, err := db.JobHistory(s.ID, "job-b"); err != nil || h.Delta == nil || !h.Delta.Empty() {
		t.Errorf("JobHistory(job-b) = %+v, %v; want the no-change success", h, err)
	}
	if _, err := db.JobHistory(s.ID, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("JobHistory(nope) = %v; want ErrNotFound", err)
	}
	if two, _, _ := db.History(s.ID, 2); len(two) != 2 || two[0].JobID != "job-late" {
		t.Errorf("History(limit 2) = %d entries; want the newest 2", len(two))
	}
	if _, _, err := db.History("nope", 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("History(nope) = %v; want ErrNotFound", err)
	}
	if err := db.DeleteServer(s.ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, stdioServer("files"))
	if hist, total, _ := db.History(s.ID, 0); len(hist) != 0 || total != 0 {
		t.Errorf("History of a re-created server = %d entries; want none (deleted with the server)", len(hist))
	}
}

// The history keeps the newest HistoryKeep entries, and a delta lists at
// most deltaNames names per kind with complete counts.
func TestHistoryBounds(t *testing.T) {
	db := mustOpenOpts(t, Options{NoSync: true})
	s := mustCreate(t, db, stdioServer("big"))
	var many []Tool
	for i := range 30 {
		many = append(many, mkTool(string(rune('a'+i/26))+string(rune('a'+i%26)), "v1"))
	}
	mustRecordSuccess(t, db, s.ID, verification(s, "first", at(1), many...))
	h, err := db.JobHistory(s.ID, "first")
	if err != nil {
		t.Fatal(err)
	}
	d := h.Delta
	if d.Added != 30 || len(d.AddedNames) != deltaNames || d.AddedNames[0] != "aa" {
		t.Errorf("delta of 30 new tools = %d added, %d names from %q; want 30, %d names from aa", d.Added, len(d.AddedNames), d.AddedNames[0], deltaNames)
	}
	for i := range HistoryKeep + 5 {
		if err := db.RecordFailure(s.ID, failure(s, "f"+time.Duration(i).String(), StatusFailed, at(10+i))); err != nil {
			t.Fatal(err)
		}
	}
	hist, total, err := db.History(s.ID, 0)
	if err != nil || total != HistoryKeep || len(hist) != HistoryKeep {
		t.Fatalf("History after %d entries = %d (total %d), %v; want %d", HistoryKeep+6, len(hist), total, err, HistoryKeep)
	}
	if hist[len(hist)-1].JobID != "f5ns" {
		t.Errorf("oldest kept = %s; want f5ns (the first six dropped)", hist[len(hist)-1].JobID)
	}
}

func TestFreshness(t *testing.T) {
	const ttl = 5 * time.Minute
	srv := stdioServer("x")
	ok := Discovery{Status: StatusSuccess, VerifiedAt: at(0), LastAttemptAt: at(0), ConfigHash: srv.ConfigHash()}
	failed := ok
	failed.Status, failed.LastAttemptAt, failed.Error = StatusTimeout, at(100), &VerifyError{Class: "timeout", Phase: "initializing"}
	edited := srv
	edited.Args, edited.UpdatedAt = []string{"other"}, at(50)
	short := srv
	short.TTLSeconds = 10

	tests := []struct {
		name string
		sum  Summary
		now  time.Time
		want Freshness
	}{
		{"never", Summary{srv, Discovery{Status: StatusNever}}, at(0), Freshness{State: FreshNever}},
		{"fresh", Summary{srv, ok}, at(299), Freshness{State: FreshFresh, VerifiedAt: at(0), Until: at(300)}},
		{"ttl", Summary{srv, ok}, at(300), Freshness{State: FreshStale, VerifiedAt: at(0), Since: at(300), Reason: StaleTTL}},
		{"own ttl", Summary{short, ok}, at(11), Freshness{State: FreshStale, VerifiedAt: at(0), Since: at(10), Reason: StaleTTL}},
		{"config", Summary{edited, ok}, at(60), Freshness{State: FreshStale, VerifiedAt: at(0), Since: at(50), Reason: StaleConfig}},
		{"failed", Summary{srv, failed}, at(120), Freshness{State: FreshFailed, VerifiedAt: at(0), Since: at(100), Error: failed.Error}},
		{"running keeps", Summary{srv, Discovery{Status: StatusRunning, VerifiedAt: at(0), ConfigHash: srv.ConfigHash()}}, at(1), Freshness{State: FreshFresh, VerifiedAt: at(0), Until: at(300)}},
	}
	for _, tt := range tests {
		if got := tt.sum.Freshness(ttl, tt.now); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Freshness = %+v; want %+v", tt.name, got, tt.want)
		}
	}
	remote := Server{Transport: TransportHTTP}
	on, off := true, false
	if !remote.AutoRefreshOn() || srv.AutoRefreshOn() {
		t.Errorf("AutoRefreshOn defaults: remote %v, stdio %v; want true, false", remote.AutoRefreshOn(), srv.AutoRefreshOn())
	}
	remote.AutoRefresh, srv.AutoRefresh = &off, &on
	if remote.AutoRefreshOn() || !srv.AutoRefreshOn() {
		t.Errorf("AutoRefreshOn set: remote %v, stdio %v; want false, true", remote.AutoRefreshOn(), srv.AutoRefreshOn())
	}
}

// ApproveChanges approves all the shown versions, or none.
func TestApproveChanges(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("files"))
	a1, a2, b1, b2, c1 := mkTool("a", "v1"), mkTool("a", "v2"), mkTool("b", "v1"), mkTool("b", "v2"), mkTool("c", "v1")
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(10), a1, b1, c1))
	mustRecordSuccess(t, db, s.ID, verification(s, "j2", at(20), a2, b2, c1))

	if _, err := db.ApproveChanges(s.ID, map[string]string{"a": a2.Pin, "b": b1.Pin}, "me"); !errors.Is(err, ErrPinMismatch) {
		t.Errorf("ApproveChanges with one stale pin = %v; want ErrPinMismatch", err)
	}
	if _, err := db.ApproveChanges(s.ID, map[string]string{"a": a2.Pin, "c": c1.Pin}, "me"); !errors.Is(err, ErrNotChanged) {
		t.Errorf("ApproveChanges with an unchanged tool = %v; want ErrNotChanged", err)
	}
	if _, err := db.ApproveChanges(s.ID, map[string]string{"a": a2.Pin, "zz": "x"}, "me"); !errors.Is(err, ErrToolNotFound) {
		t.Errorf("ApproveChanges with an unknown tool = %v; want ErrToolNotFound", err)
	}
	if got := mustTools(t, db, s.ID); got["a"].State != ToolChanged || got["b"].State != ToolChanged {
		t.Fatalf("after refused approvals: a %s, b %s; want both still changed", got["a"].State, got["b"].State)
	}
	if n := mustSummary(t, db, s.ID).Discovery.Changed; n != 2 {
		t.Errorf("Discovery.Changed with two changed tools = %d; want 2", n)
	}
	out, err := db.ApproveChanges(s.ID, map[string]string{"a": a2.Pin, "b": b2.Pin}, "me")
	if err != nil || len(out) != 2 {
		t.Fatalf("ApproveChanges(a, b) = %d, %v; want 2, nil", len(out), err)
	}
	if n := mustSummary(t, db, s.ID).Discovery.Changed; n != 0 {
		t.Errorf("Discovery.Changed after approving both = %d; want 0", n)
	}
	for _, e := range mustTools(t, db, s.ID) {
		if e.State != ToolActive || e.Effective != PolicyAsk || e.Policy.Pin != e.Pin {
			t.Errorf("%s after approval: state %s, effective %s, pin approved %v; want active, ask, true", e.Name, e.State, e.Effective, e.Policy.Pin == e.Pin)
		}
	}
}

// A schema-1 file gets the approved definitions of its tools when opened.
func TestMigrateToSchema2(t *testing.T) {
	path := t.TempDir() + "/old.db"
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := Server{ID: "files", Name: "f", Transport: TransportStdio, Command: "x", DefaultPolicy: PolicyAsk}
	if err := db.CreateServer(s); err != nil {
		t.Fatal(err)
	}
	s, _ = db.Server("files")
	r1, w1, w2 := mkTool("read", "v1"), mkTool("write", "v1"), mkTool("write", "v2")
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(1), r1, w1))
	mustRecordSuccess(t, db, s.ID, verification(s, "j2", at(2), r1, w2))
	// Make it look like schema 1: no approved definitions, no history.
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketApproved, bucketHistory} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return putJSON(tx.Bucket(bucketMeta), keySchemaVersion, 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = mustOpenPath(t, path, Options{})
	if _, approved, err := db.ToolVersions("files", "read"); err != nil || approved == nil || approved.Pin != r1.Pin {
		t.Errorf("ToolVersions(read) after migration: approved %+v, %v; want v1", approved, err)
	}
	if e, approved, err := db.ToolVersions("files", "write"); err != nil || approved != nil || e.State != ToolChanged {
		t.Errorf("ToolVersions(write) after migration: approved %+v, state %s, %v; want none (never stored), changed", approved, e.State, err)
	}
	err = db.bolt.View(func(tx *bolt.Tx) error {
		var v int
		if err := getJSON(tx.Bucket(bucketMeta), keySchemaVersion, &v); err != nil || v != SchemaVersion {
			t.Errorf("schema version after migration = %d, %v; want %d", v, err, SchemaVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A verification of an old configuration that ends after the new
// configuration's success is discarded without touching the record.
func TestLateDiscardKeepsNewerRecord(t *testing.T) {
	db := mustOpen(t)
	old := mustCreate(t, db, stdioServer("files"))
	if err := db.MarkRunning(old.ID, "old-job", at(1)); err != nil {
		t.Fatal(err)
	}
	edited := old
	edited.Args = []string{"--new"}
	if err := db.UpdateServer(edited); err != nil {
		t.Fatal(err)
	}
	edited, _ = db.Server("files")
	if err := db.MarkRunning(old.ID, "new-job", at(2)); err != nil {
		t.Fatal(err)
	}
	mustRecordSuccess(t, db, old.ID, verification(edited, "new-job", at(3), mkTool("a", "v1")))
	if err := db.RecordFailure(old.ID, failure(old, "old-job", StatusCancelled, at(4))); !errors.Is(err, ErrConfigChanged) {
		t.Fatalf("late failure of the old configuration = %v; want ErrConfigChanged", err)
	}
	if d := mustSummary(t, db, old.ID).Discovery; d.Status != StatusSuccess || d.JobID != "new-job" || d.Error != nil {
		t.Errorf("record after the late discard = %s (job %s, error %v); want the new job's success", d.Status, d.JobID, d.Error)
	}
	if h, err := db.JobHistory(old.ID, "old-job"); err != nil || h.Outcome != OutcomeDiscarded {
		t.Errorf("old job's history = %+v, %v; want discarded", h, err)
	}
}

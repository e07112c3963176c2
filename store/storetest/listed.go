package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// mkListed is a listed entry whose raw definition and pin stand for
// version.
func mkListed(kind store.ListedKind, key, version string) store.Listed {
	sum := sha256.Sum256([]byte(string(kind) + key + version))
	raw, err := json.Marshal(map[string]string{"key": key, "description": version})
	if err != nil {
		panic(err)
	}
	return store.Listed{Kind: kind, Key: key, Name: key, Description: version, Raw: raw, Pin: hex.EncodeToString(sum[:])}
}

// listedBy reads the server's listed entries by store.ListedKey.
func listedBy(t *testing.T, db store.Store, id string) map[string]store.ListedEntry {
	t.Helper()
	es, err := db.Listed(t.Context(), id)
	if err != nil {
		t.Fatalf("Listed(%q) = %v", id, err)
	}
	out := map[string]store.ListedEntry{}
	for _, e := range es {
		out[store.ListedKey(e.Kind, e.Key)] = e
	}
	return out
}

// Resources, resource templates and prompts merge, change, go missing,
// take policies and approvals like tools, and survive a reopen; a kind
// whose listing failed keeps what was known.
func testListedMergeAndApprove(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	if got, err := db.Listed(ctx, s.ID); err != nil || len(got) != 0 {
		t.Fatalf("Listed before any verification = %v, %v; want empty", got, err)
	}
	if _, err := db.Listed(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Listed(nope) = %v; want ErrNotFound", err)
	}
	r1, p1, p2, tp1, gone := mkListed(store.KindResource, "file:///a", "v1"), mkListed(store.KindPrompt, "greet", "v1"),
		mkListed(store.KindPrompt, "greet", "v2"), mkListed(store.KindResourceTemplate, "file:///{x}", "v1"), mkListed(store.KindPrompt, "old", "v1")
	v := Verification(s, "j1", At(10), MkTool("a", "v1"))
	v.Listed = []store.Listed{r1, p1, tp1, gone}
	MustRecordSuccess(t, db, s.ID, v)
	got := listedBy(t, db, s.ID)
	if len(got) != 4 {
		t.Fatalf("Listed after j1 = %d entries; want 4", len(got))
	}
	for k, e := range got {
		if e.State != store.ToolActive || e.Policy.Policy != store.PolicyAsk || e.Effective != store.PolicyAsk || e.Policy.Pin != e.Pin {
			t.Errorf("%q after j1: state %s, policy %s, effective %s; want active, ask, ask at its pin", k, e.State, e.Policy.Policy, e.Effective)
		}
	}
	if _, err := db.SetListedPolicy(ctx, store.ListedRef{ServerID: s.ID, Kind: store.KindPrompt, Key: "greet"}, store.PolicyAllow, "me"); err != nil {
		t.Fatalf("SetListedPolicy = %v", err)
	}
	if _, err := db.SetListedPolicy(ctx, store.ListedRef{ServerID: s.ID, Kind: store.KindPrompt, Key: "zz"}, store.PolicyAllow, "me"); !errors.Is(err, store.ErrToolNotFound) {
		t.Errorf("SetListedPolicy(zz) = %v; want ErrToolNotFound", err)
	}

	// j2: greet changed (rug pull), old gone; templates not listed this time.
	v = Verification(s, "j2", At(20), MkTool("a", "v1"))
	v.Listed = []store.Listed{r1, p2}
	v.Unlisted = []store.ListedKind{store.KindResourceTemplate}
	MustRecordSuccess(t, db, s.ID, v)
	db = be.Reopen(t, db)
	got = listedBy(t, db, s.ID)
	greet := got[store.ListedKey(store.KindPrompt, "greet")]
	if greet.State != store.ToolChanged || greet.Effective != store.PolicyDeny || greet.Policy.Policy != store.PolicyAllow || greet.Description != "v2" {
		t.Errorf("greet after change: state %s, effective %s, policy %s, %q; want changed, deny, allow (kept), v2", greet.State, greet.Effective, greet.Policy.Policy, greet.Description)
	}
	if e := got[store.ListedKey(store.KindPrompt, "old")]; e.State != store.ToolMissing {
		t.Errorf("old after j2: state %s; want missing", e.State)
	}
	if e := got[store.ListedKey(store.KindResourceTemplate, "file:///{x}")]; e.State != store.ToolActive || !e.FirstSeen.Equal(At(10)) {
		t.Errorf("template not listed in j2: state %s, first seen %v; want kept active from j1", e.State, e.FirstSeen)
	}
	if e := got[store.ListedKey(store.KindResource, "file:///a")]; e.State != store.ToolActive || !e.FirstSeen.Equal(At(10)) || !e.LastSeen.Equal(At(20)) {
		t.Errorf("resource: %s, first %v, last %v; want active, j1, j2", e.State, e.FirstSeen, e.LastSeen)
	}

	ref := store.ListedRef{ServerID: s.ID, Kind: store.KindPrompt, Key: "greet"}
	if _, err := db.ApproveListed(ctx, ref, p1.Pin, "me"); !errors.Is(err, store.ErrPinMismatch) {
		t.Errorf("ApproveListed at the old pin = %v; want ErrPinMismatch", err)
	}
	e, err := db.ApproveListed(ctx, ref, p2.Pin, "me")
	if err != nil || e.State != store.ToolActive || e.Effective != store.PolicyAllow {
		t.Fatalf("ApproveListed = %s, %s, %v; want active, allow, nil", e.State, e.Effective, err)
	}
	db = be.Reopen(t, db)
	if e := listedBy(t, db, s.ID)[store.ListedKey(store.KindPrompt, "greet")]; e.State != store.ToolActive || e.Effective != store.PolicyAllow || e.Policy.Pin != p2.Pin {
		t.Errorf("greet after approval and reopen: %s, %s; want active, allow at the new pin", e.State, e.Effective)
	}
	if err := db.DeleteServer(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if be.Leftovers != nil {
		if left := be.Leftovers(t, db, s.ID); len(left) != 0 {
			t.Errorf("after delete, left: %q", left)
		}
	}
}

// A changed prompt counts among the server's changes awaiting review
// beside its changed tools, and keeps the definition that was approved
// (for the review) until it is approved; the count follows approvals and
// policy changes.
func testListedChangesCounted(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	p1, p2, r1 := mkListed(store.KindPrompt, "greet", "v1"), mkListed(store.KindPrompt, "greet", "v2"), mkListed(store.KindResource, "file:///a", "v1")
	v := Verification(s, "j1", At(10), MkTool("a", "v1"))
	v.Listed = []store.Listed{p1, r1}
	MustRecordSuccess(t, db, s.ID, v)
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 0 {
		t.Errorf("Discovery.Changed after the first verification = %d; want 0", n)
	}
	v = Verification(s, "j2", At(20), MkTool("a", "v2"))
	v.Listed = []store.Listed{p2, r1}
	MustRecordSuccess(t, db, s.ID, v)
	db = be.Reopen(t, db)
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 2 {
		t.Errorf("Discovery.Changed with a changed tool and a changed prompt = %d; want 2", n)
	}
	greet := listedBy(t, db, s.ID)[store.ListedKey(store.KindPrompt, "greet")]
	if greet.State != store.ToolChanged || string(greet.Approved) != string(p1.Raw) || string(greet.Raw) != string(p2.Raw) {
		t.Errorf("greet after its change: %s, approved %s, raw %s; want changed, approved %s, raw %s", greet.State, greet.Approved, greet.Raw, p1.Raw, p2.Raw)
	}

	ref := store.ListedRef{ServerID: s.ID, Kind: store.KindPrompt, Key: "greet"}
	if _, err := db.SetListedPolicy(ctx, ref, store.PolicyAllow, "me"); err != nil {
		t.Fatalf("SetListedPolicy = %v", err)
	}
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 2 {
		t.Errorf("Discovery.Changed after a policy change (still unapproved) = %d; want 2", n)
	}
	if _, err := db.ApproveListed(ctx, ref, p1.Pin, "me"); !errors.Is(err, store.ErrPinMismatch) {
		t.Errorf("ApproveListed at the approved pin = %v; want ErrPinMismatch", err)
	}
	e, err := db.ApproveListed(ctx, ref, p2.Pin, "me")
	if err != nil || e.State != store.ToolActive || e.Approved != nil {
		t.Fatalf("ApproveListed = %s, approved %s, %v; want active, none kept, nil", e.State, e.Approved, err)
	}
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 1 {
		t.Errorf("Discovery.Changed after approving the prompt = %d; want 1 (the tool)", n)
	}
	if _, err := db.ApproveTool(ctx, store.ToolRef{ServerID: s.ID, Tool: "a"}, MkTool("a", "v2").Pin, "me"); err != nil {
		t.Fatalf("ApproveTool = %v", err)
	}
	db = be.Reopen(t, db)
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 0 {
		t.Errorf("Discovery.Changed after approving both = %d; want 0", n)
	}
}

// Changed tools and listed entries approved together are approved all or
// none: a stale pin of either leaves both changed.
func testListedApproveAll(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	p1, p2, t1, t2 := mkListed(store.KindPrompt, "greet", "v1"), mkListed(store.KindPrompt, "greet", "v2"),
		mkListed(store.KindResourceTemplate, "file:///{x}", "v1"), mkListed(store.KindResourceTemplate, "file:///{x}", "v2")
	v := Verification(s, "j1", At(10), MkTool("a", "v1"))
	v.Listed = []store.Listed{p1, t1}
	MustRecordSuccess(t, db, s.ID, v)
	v = Verification(s, "j2", At(20), MkTool("a", "v2"))
	v.Listed = []store.Listed{p2, t2}
	MustRecordSuccess(t, db, s.ID, v)
	tools := map[string]string{"a": MkTool("a", "v2").Pin}

	for _, c := range []struct {
		name   string
		listed []store.ListedPin
		want   error
	}{
		{"a stale pin", []store.ListedPin{{Kind: store.KindPrompt, Key: "greet", Pin: p2.Pin}, {Kind: store.KindResourceTemplate, Key: "file:///{x}", Pin: t1.Pin}}, store.ErrPinMismatch},
		{"no such entry", []store.ListedPin{{Kind: store.KindPrompt, Key: "greet", Pin: p2.Pin}, {Kind: store.KindPrompt, Key: "zz", Pin: p2.Pin}}, store.ErrToolNotFound},
	} {
		if _, _, err := db.ApproveAll(ctx, s.ID, tools, c.listed, "me"); !errors.Is(err, c.want) {
			t.Errorf("ApproveAll(%s) = %v; want %v", c.name, err, c.want)
		}
		if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 3 {
			t.Errorf("Discovery.Changed after ApproveAll(%s) = %d; want 3 (nothing approved)", c.name, n)
		}
	}
	gotTools, gotListed, err := db.ApproveAll(ctx, s.ID, tools, []store.ListedPin{{Kind: store.KindPrompt, Key: "greet", Pin: p2.Pin}, {Kind: store.KindResourceTemplate, Key: "file:///{x}", Pin: t2.Pin}}, "me")
	if err != nil || len(gotTools) != 1 || len(gotListed) != 2 || gotListed[0].Key != "greet" || gotListed[1].State != store.ToolActive {
		t.Fatalf("ApproveAll(all) = %d tools, %+v, %v; want 1 tool, greet then the template, active", len(gotTools), gotListed, err)
	}
	db = be.Reopen(t, db)
	if n := MustSummary(t, db, s.ID).Discovery.Changed; n != 0 {
		t.Errorf("Discovery.Changed after approving all = %d; want 0", n)
	}
	for k, e := range listedBy(t, db, s.ID) {
		if e.State != store.ToolActive || e.Policy.Pin != e.Pin {
			t.Errorf("%q after approving all: %s at %s; want active at its pin", k, e.State, e.Policy.Pin)
		}
	}
}

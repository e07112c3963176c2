package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// t0 is the base of the fixed clock used for verification times.
var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// At is sec seconds after the suite's fixed start of time.
func At(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// StdioServer is a stdio server with every setting filled in.
func StdioServer(id string) store.Server {
	return store.Server{
		ID:            id,
		Name:          "Server " + id,
		Transport:     store.TransportStdio,
		Command:       "npx",
		Args:          []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"},
		Env:           map[string]string{"TOKEN": "secret", "HOME": "/home/me"},
		Cwd:           "/srv",
		TimeoutMS:     5000,
		DefaultPolicy: store.PolicyAsk,
		Enabled:       true,
	}
}

// MustCreate creates s and returns it as stored.
func MustCreate(t *testing.T, db store.Store, s store.Server) store.Server {
	ctx := t.Context()
	t.Helper()
	if err := db.CreateServer(ctx, s); err != nil {
		t.Fatalf("CreateServer(%q) = %v; want nil", s.ID, err)
	}
	got, err := db.Server(ctx, s.ID)
	if err != nil {
		t.Fatalf("Server(%q) = %v; want nil", s.ID, err)
	}
	return got
}

// MkTool returns a tool as discovery would hand it over: Raw is the whole
// object and Pin its SHA-256. version changes the description, and so the pin.
func MkTool(name, version string) store.Tool {
	desc := name + " " + version
	raw, err := json.Marshal(map[string]any{
		"name":        name,
		"description": desc,
		"inputSchema": map[string]any{"type": "object"},
	})
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(raw)
	return store.Tool{
		Name:        name,
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Raw:         raw,
		Pin:         hex.EncodeToString(sum[:]),
	}
}

// Verification is a successful verification of s that finished at fin.
func Verification(s store.Server, jobID string, fin time.Time, tools ...store.Tool) store.Verification {
	return store.Verification{
		JobID:           jobID,
		ConfigHash:      s.ConfigHash(),
		StartedAt:       fin.Add(-1500 * time.Millisecond),
		FinishedAt:      fin,
		Timings:         []store.PhaseTiming{{Phase: "initialize", MS: 1000}, {Phase: "tools/list", MS: 500}},
		ProtocolVersion: "2025-06-18",
		ServerName:      "fixture",
		ServerVersion:   "1.2.3",
		Capabilities:    json.RawMessage(`{"tools":{}}`),
		Instructions:    "be nice",
		Warnings:        []string{"tool name \"x\" appears more than once; kept the first definition"},
		Tools:           tools,
	}
}

// Failure is a verification of s that ended with status at fin.
func Failure(s store.Server, jobID string, status store.Status, fin time.Time) store.Failure {
	return store.Failure{
		JobID:      jobID,
		ConfigHash: s.ConfigHash(),
		Status:     status,
		StartedAt:  fin.Add(-2 * time.Second),
		FinishedAt: fin,
		Timings:    []store.PhaseTiming{{Phase: "spawn", MS: 2000}},
		Error: store.VerifyError{
			Class:      "protocol",
			Phase:      "initialize",
			Message:    "server closed stdout during " + string(status),
			Suggestion: "Check the command.",
			StderrTail: "Error: cannot find module",
		},
	}
}

// MustRecordSuccess records v, failing the test on an error.
func MustRecordSuccess(t *testing.T, db store.Store, id string, v store.Verification) {
	ctx := t.Context()
	t.Helper()
	if err := db.RecordSuccess(ctx, id, v); err != nil {
		t.Fatalf("RecordSuccess(%q, %s) = %v; want nil", id, v.JobID, err)
	}
}

// MustSummary reads the server's summary, failing the test on an error.
func MustSummary(t *testing.T, db store.Store, id string) store.Summary {
	ctx := t.Context()
	t.Helper()
	sum, err := db.Summary(ctx, id)
	if err != nil {
		t.Fatalf("Summary(%q) = %v; want nil", id, err)
	}
	return sum
}

// MustTools returns the server's tools by name, after checking that Tools
// returned them ordered by name.
func MustTools(t *testing.T, db store.Store, id string) map[string]store.ToolEntry {
	ctx := t.Context()
	t.Helper()
	list, err := db.Tools(ctx, id)
	if err != nil {
		t.Fatalf("Tools(%q) = %v; want nil", id, err)
	}
	names := make([]string, len(list))
	out := make(map[string]store.ToolEntry, len(list))
	for i, e := range list {
		names[i] = e.Name
		out[e.Name] = e
	}
	if !slices.IsSorted(names) || len(out) != len(list) {
		t.Errorf("Tools(%q) names = %q; want unique and sorted", id, names)
	}
	return out
}

// entry is the ToolEntry the store should hold for tool after a
// verification of server id.
func entry(id string, tool store.Tool, state store.ToolState, first, last time.Time, p store.PolicySetting) store.ToolEntry {
	tool.ServerID = id
	tool.AgentName = store.AgentName(id, tool.Name)
	tool.State = state
	tool.FirstSeen = first
	tool.LastSeen = last
	e := store.ToolEntry{Tool: tool, Policy: p, Effective: p.Policy}
	if state == store.ToolChanged {
		e.Effective = store.PolicyDeny
	}
	return e
}

// defaultPolicy is the policy a new tool gets on a server whose default is
// policy (store.InitialPolicy, tested on its own in the store package).
func defaultPolicy(policy store.Policy, tool store.Tool, setAt time.Time) store.PolicySetting {
	p := store.PolicySetting{Pin: tool.Pin, SetBy: store.PolicySetByDefault, SetAt: setAt}
	p.Policy, p.Reason = store.InitialPolicy(policy, tool.Annotations)
	return p
}

func checkEntry(t *testing.T, call string, got, want store.ToolEntry) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v; want %+v", call, got, want)
	}
}

func testServerCRUD(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)

	in := StdioServer("files")
	before := time.Now()
	if err := db.CreateServer(ctx, in); err != nil {
		t.Fatalf("CreateServer(%q) = %v; want nil", in.ID, err)
	}
	after := time.Now()

	got, err := db.Server(ctx, in.ID)
	if err != nil {
		t.Fatalf("Server(%q) = %v; want nil", in.ID, err)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(after) || got.CreatedAt.Location() != time.UTC {
		t.Errorf("Server(%q).CreatedAt = %v; want UTC between %v and %v", in.ID, got.CreatedAt, before, after)
	}
	if !got.UpdatedAt.Equal(got.CreatedAt) {
		t.Errorf("Server(%q).UpdatedAt = %v; want CreatedAt %v", in.ID, got.UpdatedAt, got.CreatedAt)
	}
	want := in
	want.CreatedAt, want.UpdatedAt, want.SavedConfigHash = got.CreatedAt, got.UpdatedAt, in.ConfigHash()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Server(%q) = %+v; want %+v", in.ID, got, want)
	}
	created := got

	sum := MustSummary(t, db, in.ID)
	wantSum := store.Summary{Server: want, Discovery: store.Discovery{ServerID: in.ID, Status: store.StatusNever}}
	if !reflect.DeepEqual(sum, wantSum) {
		t.Errorf("Summary(%q) = %+v; want %+v", in.ID, sum, wantSum)
	}
	if tools, err := db.Tools(ctx, in.ID); err != nil || tools == nil || len(tools) != 0 {
		t.Errorf("Tools(%q) = %v, %v; want [], nil", in.ID, tools, err)
	}

	t.Run("duplicate id", func(t *testing.T) {
		dup := StdioServer("files")
		dup.Name = "Other"
		if err := db.CreateServer(ctx, dup); !errors.Is(err, store.ErrExists) {
			t.Errorf("CreateServer(duplicate %q) = %v; want ErrExists", dup.ID, err)
		}
		if got, _ := db.Server(ctx, in.ID); !reflect.DeepEqual(got, created) {
			t.Errorf("Server(%q) after duplicate create = %+v; want unchanged %+v", in.ID, got, created)
		}
	})

	t.Run("missing id", func(t *testing.T) {
		const id = "nope"
		if _, err := db.Server(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Server(%q) = %v; want ErrNotFound", id, err)
		}
		if _, err := db.Summary(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Summary(%q) = %v; want ErrNotFound", id, err)
		}
		if _, err := db.Tools(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Tools(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.UpdateServer(ctx, StdioServer(id)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UpdateServer(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.DeleteServer(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteServer(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.MarkRunning(ctx, id, "job", At(0)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("MarkRunning(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.RecordSuccess(ctx, id, Verification(StdioServer(id), "job", At(1))); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RecordSuccess(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.RecordFailure(ctx, id, Failure(StdioServer(id), "job", store.StatusFailed, At(1))); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RecordFailure(%q) = %v; want ErrNotFound", id, err)
		}
		if _, err := db.Summary(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Summary(%q) after failed writes = %v; want ErrNotFound (nothing created)", id, err)
		}
	})

	t.Run("update keeps CreatedAt", func(t *testing.T) {
		up := StdioServer("files")
		up.Name = "Renamed"
		up.Args = []string{"--verbose"}
		up.Env = nil
		up.Headers = map[string]string{"X": "y"}
		up.DefaultPolicy = store.PolicyDeny
		up.Enabled = false
		up.CreatedAt = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC) // must be ignored
		if err := db.UpdateServer(ctx, up); err != nil {
			t.Fatalf("UpdateServer(%q) = %v; want nil", up.ID, err)
		}
		got, err := db.Server(ctx, up.ID)
		if err != nil {
			t.Fatalf("Server(%q) = %v; want nil", up.ID, err)
		}
		if !got.CreatedAt.Equal(created.CreatedAt) {
			t.Errorf("Server(%q).CreatedAt after update = %v; want %v", up.ID, got.CreatedAt, created.CreatedAt)
		}
		if got.UpdatedAt.Before(created.UpdatedAt) {
			t.Errorf("Server(%q).UpdatedAt after update = %v; want >= %v", up.ID, got.UpdatedAt, created.UpdatedAt)
		}
		want := up
		want.CreatedAt, want.UpdatedAt, want.SavedConfigHash = got.CreatedAt, got.UpdatedAt, up.ConfigHash()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Server(%q) after update = %+v; want %+v", up.ID, got, want)
		}
	})

	t.Run("delete removes discovery, tools and policies", func(t *testing.T) {
		s := MustCreate(t, db, StdioServer("gone"))
		a, b := MkTool("read", "v1"), MkTool("write", "v1")
		MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(10), a, b))
		if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: "write"}, store.PolicyAllow, "dashboard"); err != nil {
			t.Fatalf("SetPolicy(%q, write) = %v; want nil", s.ID, err)
		}

		if err := db.DeleteServer(ctx, s.ID); err != nil {
			t.Fatalf("DeleteServer(%q) = %v; want nil", s.ID, err)
		}
		if _, err := db.Server(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Server(%q) after delete = %v; want ErrNotFound", s.ID, err)
		}
		if _, err := db.Summary(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Summary(%q) after delete = %v; want ErrNotFound", s.ID, err)
		}
		if _, err := db.Tools(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Tools(%q) after delete = %v; want ErrNotFound", s.ID, err)
		}
		if err := db.DeleteServer(ctx, s.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteServer(%q) twice = %v; want ErrNotFound", s.ID, err)
		}
		// Nothing is left behind under the id, even where no reader looks.
		if be.Leftovers != nil {
			if left := be.Leftovers(t, db, s.ID); len(left) > 0 {
				t.Errorf("after DeleteServer(%q) the store still holds %q; want nothing", s.ID, left)
			}
		}

		// Re-creating the id starts from nothing: no record, no tools, and
		// the old policy does not come back.
		again := MustCreate(t, db, StdioServer("gone"))
		sum := MustSummary(t, db, again.ID)
		if want := (store.Discovery{ServerID: again.ID, Status: store.StatusNever}); !reflect.DeepEqual(sum.Discovery, want) {
			t.Errorf("Summary(%q).Discovery after re-create = %+v; want %+v", again.ID, sum.Discovery, want)
		}
		if got := MustTools(t, db, again.ID); len(got) != 0 {
			t.Errorf("Tools(%q) after re-create = %v; want none", again.ID, got)
		}
		if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: again.ID, Tool: "write"}, store.PolicyAllow, "dashboard"); !errors.Is(err, store.ErrToolNotFound) {
			t.Errorf("SetPolicy(%q, write) after re-create = %v; want ErrToolNotFound", again.ID, err)
		}
		MustRecordSuccess(t, db, again.ID, Verification(again, "j2", At(20), b))
		got := MustTools(t, db, again.ID)
		checkEntry(t, "Tools(gone)[write] after re-create", got["write"],
			entry(again.ID, b, store.ToolActive, At(20), At(20), defaultPolicy(store.PolicyAsk, b, At(20))))
		if len(got) != 1 {
			t.Errorf("len(Tools(%q)) after re-create = %d; want 1", again.ID, len(got))
		}
	})
}

func testSummariesOrderedAndEmptyNotNil(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)

	got, err := db.Summaries(ctx)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Summaries() on empty store = %#v, %v; want []Summary{}, nil", got, err)
	}
	all, err := allTools(t, db)
	if err != nil || all == nil || len(all) != 0 {
		t.Fatalf("AllTools() on empty store = %#v, %v; want []ToolEntry{}, nil", all, err)
	}

	for _, id := range []string{"zeta", "alpha", "m0x", "m-1", "m0", "beta"} {
		MustCreate(t, db, StdioServer(id))
	}
	if err := db.MarkRunning(ctx, "beta", "job-b", At(5)); err != nil {
		t.Fatalf("MarkRunning(beta) = %v; want nil", err)
	}

	got, err = db.Summaries(ctx)
	if err != nil {
		t.Fatalf("Summaries() = %v; want nil", err)
	}
	var ids []string
	for _, sum := range got {
		ids = append(ids, sum.Server.ID)
		if sum.Discovery.ServerID != sum.Server.ID {
			t.Errorf("Summaries()[%s].Discovery.ServerID = %q; want %q", sum.Server.ID, sum.Discovery.ServerID, sum.Server.ID)
		}
		wantStatus := store.StatusNever
		if sum.Server.ID == "beta" {
			wantStatus = store.StatusRunning
		}
		if sum.Discovery.Status != wantStatus {
			t.Errorf("Summaries()[%s].Discovery.Status = %q; want %q", sum.Server.ID, sum.Discovery.Status, wantStatus)
		}
		if sum.Server.Name != "Server "+sum.Server.ID {
			t.Errorf("Summaries()[%s].Server.Name = %q; want %q", sum.Server.ID, sum.Server.Name, "Server "+sum.Server.ID)
		}
	}
	wantIDs := []string{"alpha", "beta", "m-1", "m0", "m0x", "zeta"}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("Summaries() ids = %q; want %q", ids, wantIDs)
	}
}

func testAllToolsGroupedByServer(t *testing.T, be Backend) {
	db := be.Open(t)
	b := MustCreate(t, db, StdioServer("b"))
	a := MustCreate(t, db, StdioServer("a"))
	MustCreate(t, db, StdioServer("c")) // never verified: contributes nothing
	MustRecordSuccess(t, db, "b", Verification(b, "jb", At(1), MkTool("z", "v1"), MkTool("y", "v1")))
	MustRecordSuccess(t, db, "a", Verification(a, "ja", At(2), MkTool("x", "v1")))

	all, err := allTools(t, db)
	if err != nil {
		t.Fatalf("AllTools() = %v; want nil", err)
	}
	var got []string
	for _, e := range all {
		got = append(got, e.ServerID+"/"+e.Name)
	}
	want := []string{"a/x", "b/y", "b/z"}
	if !slices.Equal(got, want) {
		t.Errorf("AllTools() = %q; want %q", got, want)
	}
}

// The hash the store computes from what it read back must match the hash
// discovery computed from what it was given, or every verification of a
// server with empty args/env would be discarded as "config changed".
func testConfigHashSurvivesStoreRoundTrip(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	tests := []struct {
		name string
		s    store.Server
	}{
		{"full stdio", StdioServer("full")},
		{"empty non-nil collections", store.Server{ID: "empty", Transport: store.TransportStdio, Command: "x", Args: []string{}, Env: map[string]string{}, Headers: map[string]string{}, DefaultPolicy: store.PolicyAsk}},
		{"remote", store.Server{ID: "remote", Transport: store.TransportHTTP, URL: "https://x.example/mcp", Headers: map[string]string{"Authorization": "Bearer t"}, DefaultPolicy: store.PolicyAsk}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MustCreate(t, db, tt.s)
			if got.ConfigHash() != tt.s.ConfigHash() {
				t.Errorf("Server(%q).ConfigHash() = %s; want %s (as created)", tt.s.ID, got.ConfigHash(), tt.s.ConfigHash())
			}
			if err := db.RecordSuccess(ctx, tt.s.ID, Verification(tt.s, "j", At(1))); err != nil {
				t.Errorf("RecordSuccess(%q) with the creation-time hash = %v; want nil", tt.s.ID, err)
			}
		})
	}
}

func testRecordSuccessMerge(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	in := StdioServer("files")
	in.DefaultPolicy = store.PolicyAllow
	s := MustCreate(t, db, in)

	readV1, writeV1, listV1 := MkTool("read", "v1"), MkTool("write", "v1"), MkTool("list", "v1")
	readV2 := MkTool("read", "v2")

	// First verification: every tool is new and gets the server's default.
	v1 := Verification(s, "job-1", At(10), readV1, writeV1)
	MustRecordSuccess(t, db, s.ID, v1)

	sum := MustSummary(t, db, s.ID)
	if len(sum.Discovery.ToolsHash) != 64 {
		t.Errorf("Summary(%q).Discovery.ToolsHash = %q; want 64 hex digits", s.ID, sum.Discovery.ToolsHash)
	}
	wantD := store.Discovery{
		ServerID:        s.ID,
		Status:          store.StatusSuccess,
		JobID:           "job-1",
		LastAttemptAt:   v1.StartedAt,
		VerifiedAt:      At(10),
		DurationMS:      1500,
		Timings:         v1.Timings,
		ProtocolVersion: v1.ProtocolVersion,
		ServerName:      v1.ServerName,
		ServerVersion:   v1.ServerVersion,
		Capabilities:    v1.Capabilities,
		Instructions:    v1.Instructions,
		ConfigHash:      s.ConfigHash(),
		ToolsHash:       sum.Discovery.ToolsHash,
		ToolCount:       2,
		Warnings:        v1.Warnings,
		Delta:           &store.Delta{Added: 2},
	}
	if !reflect.DeepEqual(sum.Discovery, wantD) {
		t.Errorf("Summary(%q).Discovery after first success = %+v; want %+v", s.ID, sum.Discovery, wantD)
	}
	if sum.Discovery.Stale() {
		t.Errorf("Summary(%q).Discovery.Stale() after success = true; want false", s.ID)
	}
	hash1 := sum.Discovery.ToolsHash

	got := MustTools(t, db, s.ID)
	if len(got) != 2 {
		t.Fatalf("len(Tools(%q)) = %d; want 2", s.ID, len(got))
	}
	checkEntry(t, "Tools(files)[read] after v1", got["read"],
		entry(s.ID, readV1, store.ToolActive, At(10), At(10), defaultPolicy(store.PolicyAllow, readV1, At(10))))
	checkEntry(t, "Tools(files)[write] after v1", got["write"],
		entry(s.ID, writeV1, store.ToolActive, At(10), At(10), defaultPolicy(store.PolicyAllow, writeV1, At(10))))

	// A person denies write; then the default changes (not part of the
	// config hash), so only tools discovered from now on get "ask".
	setWrite, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: "write"}, store.PolicyDeny, "dashboard")
	if err != nil {
		t.Fatalf("SetPolicy(%q, write, deny) = %v; want nil", s.ID, err)
	}
	up := s
	up.DefaultPolicy = store.PolicyAsk
	if err := db.UpdateServer(ctx, up); err != nil {
		t.Fatalf("UpdateServer(%q) = %v; want nil", s.ID, err)
	}

	// Second verification: write vanished, list is new, read unchanged.
	MustRecordSuccess(t, db, s.ID, Verification(up, "job-2", At(20), listV1, readV1))
	got = MustTools(t, db, s.ID)
	if len(got) != 3 {
		t.Fatalf("len(Tools(%q)) after v2 = %d; want 3 (missing tools are kept)", s.ID, len(got))
	}
	checkEntry(t, "Tools(files)[read] after v2", got["read"],
		entry(s.ID, readV1, store.ToolActive, At(10), At(20), defaultPolicy(store.PolicyAllow, readV1, At(10))))
	checkEntry(t, "Tools(files)[write] after v2", got["write"],
		entry(s.ID, writeV1, store.ToolMissing, At(10), At(10), setWrite.Policy))
	checkEntry(t, "Tools(files)[list] after v2", got["list"],
		entry(s.ID, listV1, store.ToolActive, At(20), At(20), defaultPolicy(store.PolicyAsk, listV1, At(20))))
	sum = MustSummary(t, db, s.ID)
	if sum.Discovery.ToolCount != 2 || sum.Discovery.JobID != "job-2" || !sum.Discovery.VerifiedAt.Equal(At(20)) {
		t.Errorf("Summary(%q).Discovery after v2 = {ToolCount:%d JobID:%q VerifiedAt:%v}; want {2 job-2 %v}",
			s.ID, sum.Discovery.ToolCount, sum.Discovery.JobID, sum.Discovery.VerifiedAt, At(20))
	}
	if sum.Discovery.ToolsHash == hash1 {
		t.Errorf("Summary(%q).Discovery.ToolsHash after the tool set changed = %s; want different from %s", s.ID, sum.Discovery.ToolsHash, hash1)
	}

	// Third verification: write comes back with the same pin (active
	// again, person's policy intact), read's definition changed (changed,
	// effectively denied, policy untouched), list vanished.
	MustRecordSuccess(t, db, s.ID, Verification(up, "job-3", At(30), readV2, writeV1))
	got = MustTools(t, db, s.ID)
	checkEntry(t, "Tools(files)[write] after v3", got["write"],
		entry(s.ID, writeV1, store.ToolActive, At(10), At(30), setWrite.Policy))
	checkEntry(t, "Tools(files)[read] after v3", got["read"],
		entry(s.ID, readV2, store.ToolChanged, At(10), At(30), defaultPolicy(store.PolicyAllow, readV1, At(10))))
	checkEntry(t, "Tools(files)[list] after v3", got["list"],
		entry(s.ID, listV1, store.ToolMissing, At(20), At(20), defaultPolicy(store.PolicyAsk, listV1, At(20))))
	if e := got["read"]; e.Effective != store.PolicyDeny || e.Policy.Policy != store.PolicyAsk {
		t.Errorf("Tools(files)[read] after pin change: Effective = %q, Policy = %q; want deny, ask (allow raised by the missing annotations)", e.Effective, e.Policy.Policy)
	}

	// Fourth verification: read reverts to the approved definition.
	MustRecordSuccess(t, db, s.ID, Verification(up, "job-4", At(40), readV1, writeV1))
	got = MustTools(t, db, s.ID)
	checkEntry(t, "Tools(files)[read] after v4", got["read"],
		entry(s.ID, readV1, store.ToolActive, At(10), At(40), defaultPolicy(store.PolicyAllow, readV1, At(10))))
}

func testToolsHash(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	a, b, c := MkTool("a", "v1"), MkTool("b", "v1"), MkTool("c", "v1")
	bChanged := MkTool("b", "v2")

	tests := []struct {
		name  string
		tools []store.Tool
	}{
		{"abc", []store.Tool{a, b, c}},
		{"cab", []store.Tool{c, a, b}},
		{"bca", []store.Tool{b, c, a}},
		{"b changed", []store.Tool{a, bChanged, c}},
		{"ab", []store.Tool{a, b}},
	}
	hashes := map[string]string{}
	for i, tt := range tests {
		s := MustCreate(t, db, StdioServer(fmt.Sprintf("s%d", i)))
		MustRecordSuccess(t, db, s.ID, Verification(s, "j", At(1), tt.tools...))
		d := MustSummary(t, db, s.ID).Discovery
		if d.ToolCount != len(tt.tools) {
			t.Errorf("Summary(%s).Discovery.ToolCount = %d; want %d", tt.name, d.ToolCount, len(tt.tools))
		}
		hashes[tt.name] = d.ToolsHash
	}
	if hashes["abc"] != hashes["cab"] || hashes["abc"] != hashes["bca"] {
		t.Errorf("ToolsHash by order = abc %s, cab %s, bca %s; want all equal", hashes["abc"], hashes["cab"], hashes["bca"])
	}
	if hashes["abc"] == hashes["b changed"] {
		t.Errorf("ToolsHash(b changed) = %s; want different from ToolsHash(abc) %s", hashes["b changed"], hashes["abc"])
	}
	if hashes["abc"] == hashes["ab"] {
		t.Errorf("ToolsHash(ab) = %s; want different from ToolsHash(abc) %s", hashes["ab"], hashes["abc"])
	}

	// Re-verifying the same set, in another order, keeps the hash.
	s0, _ := db.Server(ctx, "s0")
	MustRecordSuccess(t, db, "s0", Verification(s0, "j2", At(2), c, b, a))
	if got := MustSummary(t, db, "s0").Discovery.ToolsHash; got != hashes["abc"] {
		t.Errorf("ToolsHash after re-verifying the same tools = %s; want %s", got, hashes["abc"])
	}
}

func testPolicySurvivesReverification(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	read, write := MkTool("read", "v1"), MkTool("write", "v1")
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(10), read, write))

	before := time.Now()
	e, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: "write"}, store.PolicyDeny, "dashboard")
	if err != nil {
		t.Fatalf("SetPolicy(%q, write, deny, dashboard) = _, %v; want nil", s.ID, err)
	}
	if e.Policy.SetAt.Before(before) || e.Policy.SetAt.Location() != time.UTC {
		t.Errorf("SetPolicy(...).Policy.SetAt = %v; want UTC, not before %v", e.Policy.SetAt, before)
	}
	wantSet := entry(s.ID, write, store.ToolActive, At(10), At(10),
		store.PolicySetting{Policy: store.PolicyDeny, Pin: write.Pin, SetBy: "dashboard", SetAt: e.Policy.SetAt})
	checkEntry(t, "SetPolicy(files, write, deny, dashboard)", e, wantSet)
	checkEntry(t, "Tools(files)[write] after SetPolicy", MustTools(t, db, s.ID)["write"], wantSet)

	for i, fin := range []time.Time{At(20), At(30)} {
		MustRecordSuccess(t, db, s.ID, Verification(s, fmt.Sprintf("j%d", i+2), fin, write, read))
		got := MustTools(t, db, s.ID)
		wantWrite := wantSet
		wantWrite.LastSeen = fin
		checkEntry(t, fmt.Sprintf("Tools(files)[write] after re-verification %d", i+1), got["write"], wantWrite)
		checkEntry(t, fmt.Sprintf("Tools(files)[read] after re-verification %d", i+1), got["read"],
			entry(s.ID, read, store.ToolActive, At(10), fin, defaultPolicy(store.PolicyAsk, read, At(10))))
	}
}

// Setting a policy on a changed tool does not approve the change: the
// tool stays changed (denied) until its new version is approved, at the
// pin the person was shown; the policy is kept through the approval.
func testSetPolicyDoesNotApproveChangedTool(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	v1, v2, v3 := MkTool("exec", "v1"), MkTool("exec", "v2"), MkTool("exec", "v3")
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(10), v1))
	if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"}, store.PolicyAllow, "alice"); err != nil {
		t.Fatalf("SetPolicy(%q, exec, allow) = %v; want nil", s.ID, err)
	}
	MustRecordSuccess(t, db, s.ID, Verification(s, "j2", At(20), v2))
	if e := MustTools(t, db, s.ID)["exec"]; e.State != store.ToolChanged || e.Effective != store.PolicyDeny || e.Policy.Policy != store.PolicyAllow || e.Policy.Pin != v1.Pin {
		t.Fatalf("Tools(files)[exec] after pin change = {State:%s Effective:%s Policy:%s Pin:%.8s}; want {changed deny allow %.8s}",
			e.State, e.Effective, e.Policy.Policy, e.Policy.Pin, v1.Pin)
	}

	e, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"}, store.PolicyAsk, "bob")
	if err != nil {
		t.Fatalf("SetPolicy(%q, exec, ask, bob) = %v; want nil", s.ID, err)
	}
	want := entry(s.ID, v2, store.ToolChanged, At(10), At(20), store.PolicySetting{Policy: store.PolicyAsk, Pin: v1.Pin, SetBy: "bob", SetAt: e.Policy.SetAt})
	checkEntry(t, "SetPolicy(files, exec, ask, bob) on a changed tool", e, want)
	checkEntry(t, "Tools(files)[exec] after SetPolicy", MustTools(t, db, s.ID)["exec"], want)

	// The diff shows v1 (approved) against v2 (current).
	cur, approved, err := db.ToolVersions(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"})
	if err != nil || approved == nil || approved.Pin != v1.Pin || approved.Description != v1.Description || cur.Pin != v2.Pin {
		t.Fatalf("ToolVersions(files, exec) = %.8s, %+v, %v; want current %.8s and approved v1 %.8s", cur.Pin, approved, err, v2.Pin, v1.Pin)
	}

	// Approving a version the person was not shown fails, and changes nothing.
	if _, err := db.ApproveTool(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"}, v3.Pin, "bob"); !errors.Is(err, store.ErrPinMismatch) {
		t.Errorf("ApproveTool(files, exec, <other pin>) = %v; want ErrPinMismatch", err)
	}
	checkEntry(t, "Tools(files)[exec] after a refused approval", MustTools(t, db, s.ID)["exec"], want)

	e, err = db.ApproveTool(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"}, v2.Pin, "carol")
	if err != nil {
		t.Fatalf("ApproveTool(files, exec, v2) = %v; want nil", err)
	}
	want = entry(s.ID, v2, store.ToolActive, At(10), At(20), store.PolicySetting{Policy: store.PolicyAsk, Pin: v2.Pin, SetBy: "carol", SetAt: e.Policy.SetAt})
	checkEntry(t, "ApproveTool(files, exec, v2)", e, want)
	checkEntry(t, "Tools(files)[exec] after approval", MustTools(t, db, s.ID)["exec"], want)
	if _, approved, _ := db.ToolVersions(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"}); approved == nil || approved.Pin != v2.Pin {
		t.Errorf("ToolVersions(files, exec) after approval: approved = %+v; want v2", approved)
	}
	if _, err := db.ApproveTool(ctx, store.ToolRef{ServerID: s.ID, Tool: "exec"}, v2.Pin, "carol"); !errors.Is(err, store.ErrNotChanged) {
		t.Errorf("ApproveTool again = %v; want ErrNotChanged", err)
	}

	// The approval is of v2: re-verifying v2 keeps it active.
	MustRecordSuccess(t, db, s.ID, Verification(s, "j3", At(30), v2))
	want.LastSeen = At(30)
	checkEntry(t, "Tools(files)[exec] after re-verifying the approved pin", MustTools(t, db, s.ID)["exec"], want)
}

func testSetPolicyErrors(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	verified := MustCreate(t, db, StdioServer("verified"))
	MustRecordSuccess(t, db, verified.ID, Verification(verified, "j", At(1), MkTool("read", "v1")))
	MustCreate(t, db, StdioServer("fresh"))

	tests := []struct {
		name    string
		id      string
		tool    string
		wantErr error
	}{
		{"no server", "nope", "read", store.ErrNotFound},
		{"server never verified", "fresh", "read", store.ErrToolNotFound},
		{"unknown tool", "verified", "write", store.ErrToolNotFound},
		{"tool of another server", "fresh", "read", store.ErrToolNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: tt.id, Tool: tt.tool}, store.PolicyDeny, "dashboard"); !errors.Is(err, tt.wantErr) {
				t.Errorf("SetPolicy(%q, %q) = %v; want %v", tt.id, tt.tool, err, tt.wantErr)
			}
		})
	}
	if e := MustTools(t, db, "verified")["read"]; e.Policy.SetBy != store.PolicySetByDefault || e.Policy.Policy != store.PolicyAsk {
		t.Errorf("Tools(verified)[read].Policy after failed SetPolicy calls = %+v; want the untouched default", e.Policy)
	}
}

func testFailureKeepsLastGoodTools(t *testing.T, be Backend) {
	ctx := t.Context()
	for _, status := range []store.Status{store.StatusFailed, store.StatusTimeout, store.StatusCancelled} {
		t.Run(string(status), func(t *testing.T) {
			db := be.Open(t)
			s := MustCreate(t, db, StdioServer("files"))

			// Before any success a failure is not stale: there is nothing to serve.
			first := Failure(s, "job-0", status, At(5))
			if err := db.RecordFailure(ctx, s.ID, first); err != nil {
				t.Fatalf("RecordFailure(%q, %s) = %v; want nil", s.ID, status, err)
			}
			d := MustSummary(t, db, s.ID).Discovery
			if d.Status != status || d.Stale() || !d.VerifiedAt.IsZero() || d.Error == nil || *d.Error != first.Error {
				t.Errorf("Discovery after a first %s = {Status:%s Stale:%v VerifiedAt:%v Error:%+v}; want {%s false zero %+v}",
					status, d.Status, d.Stale(), d.VerifiedAt, d.Error, status, first.Error)
			}

			MustRecordSuccess(t, db, s.ID, Verification(s, "job-1", At(10), MkTool("read", "v1"), MkTool("write", "v1")))
			if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: "write"}, store.PolicyDeny, "dashboard"); err != nil {
				t.Fatalf("SetPolicy = %v; want nil", err)
			}
			okSum := MustSummary(t, db, s.ID)
			if okSum.Discovery.Stale() || okSum.Discovery.Error != nil {
				t.Errorf("Discovery after success = {Stale:%v Error:%+v}; want {false <nil>} (success clears the earlier failure)", okSum.Discovery.Stale(), okSum.Discovery.Error)
			}
			okTools, err := db.Tools(ctx, s.ID)
			if err != nil {
				t.Fatalf("Tools(%q) = %v; want nil", s.ID, err)
			}

			if err := db.MarkRunning(ctx, s.ID, "job-2", At(19)); err != nil {
				t.Fatalf("MarkRunning(%q) = %v; want nil", s.ID, err)
			}
			f := Failure(s, "job-2", status, At(21))
			if err := db.RecordFailure(ctx, s.ID, f); err != nil {
				t.Fatalf("RecordFailure(%q, %s) = %v; want nil", s.ID, status, err)
			}

			gotTools, err := db.Tools(ctx, s.ID)
			if err != nil {
				t.Fatalf("Tools(%q) after %s = %v; want nil", s.ID, status, err)
			}
			if !reflect.DeepEqual(gotTools, okTools) {
				t.Errorf("Tools(%q) after %s = %+v; want unchanged %+v", s.ID, status, gotTools, okTools)
			}

			got := MustSummary(t, db, s.ID).Discovery
			want := okSum.Discovery
			want.Status = status
			want.JobID = "job-2"
			want.LastAttemptAt = f.StartedAt
			want.FailingSince = f.StartedAt // the first failure since the success
			want.DurationMS = 2000
			want.Timings = f.Timings
			want.Error = &f.Error
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Summary(%q).Discovery after %s = %+v; want %+v", s.ID, status, got, want)
			}
			if !got.Stale() {
				t.Errorf("Summary(%q).Discovery.Stale() after %s = false; want true", s.ID, status)
			}
		})
	}
}

func testConfigChangedWhileVerifying(t *testing.T, be Backend) {
	ctx := t.Context()
	tests := []struct {
		name   string
		record func(db store.Store, old store.Server) error
	}{
		{"RecordSuccess", func(db store.Store, old store.Server) error {
			return db.RecordSuccess(ctx, old.ID, Verification(old, "job-2", At(30), MkTool("read", "v2"), MkTool("evil", "v1")))
		}},
		{"RecordFailure", func(db store.Store, old store.Server) error {
			return db.RecordFailure(ctx, old.ID, Failure(old, "job-2", store.StatusFailed, At(30)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := be.Open(t)
			old := MustCreate(t, db, StdioServer("files"))
			MustRecordSuccess(t, db, old.ID, Verification(old, "job-1", At(10), MkTool("read", "v1")))
			before := MustSummary(t, db, old.ID).Discovery
			beforeTools, err := db.Tools(ctx, old.ID)
			if err != nil {
				t.Fatalf("Tools(%q) = %v; want nil", old.ID, err)
			}

			if err := db.MarkRunning(ctx, old.ID, "job-2", At(20)); err != nil {
				t.Fatalf("MarkRunning(%q) = %v; want nil", old.ID, err)
			}
			changed := old
			changed.Command = "/usr/bin/other-server"
			if err := db.UpdateServer(ctx, changed); err != nil {
				t.Fatalf("UpdateServer(%q) = %v; want nil", old.ID, err)
			}

			if err := tt.record(db, old); !errors.Is(err, store.ErrConfigChanged) {
				t.Fatalf("%s(%q) with the old config hash = %v; want ErrConfigChanged", tt.name, old.ID, err)
			}

			gotTools, err := db.Tools(ctx, old.ID)
			if err != nil {
				t.Fatalf("Tools(%q) = %v; want nil", old.ID, err)
			}
			if !reflect.DeepEqual(gotTools, beforeTools) {
				t.Errorf("Tools(%q) after discarded %s = %+v; want unchanged %+v", old.ID, tt.name, gotTools, beforeTools)
			}
			if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: old.ID, Tool: "evil"}, store.PolicyAllow, "x"); !errors.Is(err, store.ErrToolNotFound) {
				t.Errorf("SetPolicy(%q, evil) after discarded %s = %v; want ErrToolNotFound", old.ID, tt.name, err)
			}

			got := MustSummary(t, db, old.ID).Discovery
			if got.Status != store.StatusCancelled {
				t.Errorf("Discovery.Status after discarded %s = %q; want %q", tt.name, got.Status, store.StatusCancelled)
			}
			if got.Error == nil || !strings.Contains(got.Error.Message, "configuration changed") || got.Error.Class != "cancelled" || got.Error.Suggestion == "" {
				t.Errorf("Discovery.Error after discarded %s = %+v; want class cancelled, a message saying the configuration changed, and a suggestion", tt.name, got.Error)
			}
			if !got.VerifiedAt.Equal(before.VerifiedAt) || got.ToolsHash != before.ToolsHash || got.ToolCount != before.ToolCount || got.ConfigHash != before.ConfigHash {
				t.Errorf("Discovery after discarded %s = {VerifiedAt:%v ToolsHash:%.8s ToolCount:%d ConfigHash:%.8s}; want {%v %.8s %d %.8s}",
					tt.name, got.VerifiedAt, got.ToolsHash, got.ToolCount, got.ConfigHash, before.VerifiedAt, before.ToolsHash, before.ToolCount, before.ConfigHash)
			}
			if !got.Stale() {
				t.Errorf("Discovery.Stale() after discarded %s = false; want true", tt.name)
			}

			// A verification of the new configuration is accepted.
			MustRecordSuccess(t, db, changed.ID, Verification(changed, "job-3", At(40), MkTool("read", "v2")))
			if d := MustSummary(t, db, changed.ID).Discovery; d.Status != store.StatusSuccess || d.ConfigHash != changed.ConfigHash() || d.Error != nil {
				t.Errorf("Discovery after verifying the new config = {Status:%s ConfigHash:%.8s Error:%+v}; want {success %.8s <nil>}", d.Status, d.ConfigHash, d.Error, changed.ConfigHash())
			}
		})
	}
}

// Edits that do not change what the server is must not discard a running
// verification.
func testRenameWhileVerifyingIsAccepted(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	if err := db.MarkRunning(ctx, s.ID, "job-1", At(1)); err != nil {
		t.Fatalf("MarkRunning = %v; want nil", err)
	}
	renamed := s
	renamed.Name, renamed.DefaultPolicy, renamed.TimeoutMS, renamed.Enabled = "Renamed", store.PolicyDeny, 1, false
	if err := db.UpdateServer(ctx, renamed); err != nil {
		t.Fatalf("UpdateServer = %v; want nil", err)
	}
	if err := db.RecordSuccess(ctx, s.ID, Verification(s, "job-1", At(2), MkTool("read", "v1"))); err != nil {
		t.Fatalf("RecordSuccess after a rename = %v; want nil", err)
	}
	if e := MustTools(t, db, s.ID)["read"]; e.Policy.Policy != store.PolicyDeny {
		t.Errorf("Tools(files)[read].Policy.Policy = %q; want %q (the updated default)", e.Policy.Policy, store.PolicyDeny)
	}
}

// observation is what an OnChange callback saw when it ran.
type observation struct {
	change   store.Change
	sum      store.Summary
	sumErr   error
	tools    map[string]store.ToolEntry
	toolsErr error
}

func testChangesAfterCommit(t *testing.T, be Backend) {
	ctx := t.Context()
	var (
		db  store.Store
		mu  sync.Mutex
		obs []observation
	)
	db = be.Open(t)
	db.Subscribe(func(c store.Change) {
		// Runs after the commit: a fresh read must already see the change.
		o := observation{change: c}
		o.sum, o.sumErr = db.Summary(ctx, c.ServerID)
		list, err := db.Tools(ctx, c.ServerID)
		o.toolsErr = err
		o.tools = map[string]store.ToolEntry{}
		for _, e := range list {
			o.tools[e.Name] = e
		}
		mu.Lock()
		obs = append(obs, o)
		mu.Unlock()
	})
	take := func() []observation {
		mu.Lock()
		defer mu.Unlock()
		out := obs
		obs = nil
		return out
	}

	s := StdioServer("files")
	read := MkTool("read", "v1")
	tests := []struct {
		name    string
		op      func() error
		wantErr error
		want    *store.Change // nil: OnChange must not be called
		check   func(t *testing.T, o observation)
	}{
		{
			name: "CreateServer",
			op:   func() error { return db.CreateServer(ctx, s) },
			want: &store.Change{ServerID: "files", Created: true},
			check: func(t *testing.T, o observation) {
				if o.sumErr != nil || o.sum.Server.Name != s.Name || o.sum.Discovery.Status != store.StatusNever {
					t.Errorf("Summary(files) inside OnChange = %+v, %v; want the new server", o.sum, o.sumErr)
				}
			},
		},
		{
			name:    "CreateServer duplicate",
			op:      func() error { return db.CreateServer(ctx, s) },
			wantErr: store.ErrExists,
		},
		{
			name: "UpdateServer",
			op: func() error {
				up := s
				up.Name = "Renamed"
				return db.UpdateServer(ctx, up)
			},
			want: &store.Change{ServerID: "files"},
			check: func(t *testing.T, o observation) {
				if o.sumErr != nil || o.sum.Server.Name != "Renamed" {
					t.Errorf("Summary(files).Server.Name inside OnChange = %q, %v; want Renamed", o.sum.Server.Name, o.sumErr)
				}
			},
		},
		{
			name:    "UpdateServer missing",
			op:      func() error { return db.UpdateServer(ctx, StdioServer("nope")) },
			wantErr: store.ErrNotFound,
		},
		{
			name: "MarkRunning",
			op:   func() error { return db.MarkRunning(ctx, "files", "job-1", At(1)) },
			want: &store.Change{ServerID: "files"},
			check: func(t *testing.T, o observation) {
				if o.sum.Discovery.Status != store.StatusRunning || o.sum.Discovery.JobID != "job-1" {
					t.Errorf("Summary(files).Discovery inside OnChange = {%s %s}; want {running job-1}", o.sum.Discovery.Status, o.sum.Discovery.JobID)
				}
			},
		},
		{
			name:    "MarkRunning missing",
			op:      func() error { return db.MarkRunning(ctx, "nope", "job-x", At(1)) },
			wantErr: store.ErrNotFound,
		},
		{
			name: "RecordSuccess",
			op:   func() error { return db.RecordSuccess(ctx, "files", Verification(s, "job-1", At(2), read)) },
			want: &store.Change{ServerID: "files", Tools: true, History: true},
			check: func(t *testing.T, o observation) {
				if o.sum.Discovery.Status != store.StatusSuccess || o.sum.Discovery.ToolCount != 1 {
					t.Errorf("Summary(files).Discovery inside OnChange = {%s %d}; want {success 1}", o.sum.Discovery.Status, o.sum.Discovery.ToolCount)
				}
				if e, ok := o.tools["read"]; o.toolsErr != nil || !ok || e.Pin != read.Pin {
					t.Errorf("Tools(files) inside OnChange = %v, %v; want the new tool read", o.tools, o.toolsErr)
				}
			},
		},
		{
			name:    "RecordSuccess missing",
			op:      func() error { return db.RecordSuccess(ctx, "nope", Verification(StdioServer("nope"), "j", At(2))) },
			wantErr: store.ErrNotFound,
		},
		{
			name: "SetPolicy",
			op: func() error {
				_, err := db.SetPolicy(ctx, store.ToolRef{ServerID: "files", Tool: "read"}, store.PolicyDeny, "dashboard")
				return err
			},
			want: &store.Change{ServerID: "files", Tools: true},
			check: func(t *testing.T, o observation) {
				if e := o.tools["read"]; e.Policy.Policy != store.PolicyDeny || e.Policy.SetBy != "dashboard" {
					t.Errorf("Tools(files)[read].Policy inside OnChange = %+v; want deny by dashboard", e.Policy)
				}
			},
		},
		{
			name: "SetPolicy unknown tool",
			op: func() error {
				_, err := db.SetPolicy(ctx, store.ToolRef{ServerID: "files", Tool: "nope"}, store.PolicyDeny, "dashboard")
				return err
			},
			wantErr: store.ErrToolNotFound,
		},
		{
			name: "SetPolicy missing server",
			op: func() error {
				_, err := db.SetPolicy(ctx, store.ToolRef{ServerID: "nope", Tool: "read"}, store.PolicyDeny, "dashboard")
				return err
			},
			wantErr: store.ErrNotFound,
		},
		{
			name: "RecordFailure",
			op:   func() error { return db.RecordFailure(ctx, "files", Failure(s, "job-2", store.StatusTimeout, At(3))) },
			want: &store.Change{ServerID: "files", History: true},
			check: func(t *testing.T, o observation) {
				if o.sum.Discovery.Status != store.StatusTimeout || !o.sum.Discovery.Stale() {
					t.Errorf("Summary(files).Discovery inside OnChange = {%s stale=%v}; want {timeout stale=true}", o.sum.Discovery.Status, o.sum.Discovery.Stale())
				}
			},
		},
		{
			name: "RecordFailure missing",
			op: func() error {
				return db.RecordFailure(ctx, "nope", Failure(StdioServer("nope"), "j", store.StatusFailed, At(3)))
			},
			wantErr: store.ErrNotFound,
		},
		{
			name: "DeleteServer",
			op:   func() error { return db.DeleteServer(ctx, "files") },
			want: &store.Change{ServerID: "files", Deleted: true},
			check: func(t *testing.T, o observation) {
				if !errors.Is(o.sumErr, store.ErrNotFound) || !errors.Is(o.toolsErr, store.ErrNotFound) {
					t.Errorf("Summary, Tools(files) inside OnChange = %v, %v; want ErrNotFound, ErrNotFound", o.sumErr, o.toolsErr)
				}
			},
		},
		{
			name:    "DeleteServer missing",
			op:      func() error { return db.DeleteServer(ctx, "files") },
			wantErr: store.ErrNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.op(); !errors.Is(err, tt.wantErr) {
				t.Fatalf("%s = %v; want %v", tt.name, err, tt.wantErr)
			}
			got := take()
			if tt.want == nil {
				if len(got) != 0 {
					t.Errorf("changes announced after failed %s = %+v; want none", tt.name, got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("changes announced after %s = %d; want 1", tt.name, len(got))
			}
			change := got[0].change
			if change.Revision != db.Revision() {
				t.Errorf("change of %s at revision %q; the store is at %q", tt.name, change.Revision, db.Revision())
			}
			change.Revision = ""
			if change != *tt.want {
				t.Errorf("change of %s = %+v; want %+v", tt.name, change, *tt.want)
			}
			tt.check(t, got[0])
		})
	}
}

func testConcurrentUse(t *testing.T, be Backend) {
	ctx := t.Context()
	const (
		workers = 20
		iters   = 30
		nTools  = 10
	)
	var changes atomic.Int64
	db := be.Open(t)
	db.Subscribe(func(store.Change) { changes.Add(1) })
	s := MustCreate(t, db, StdioServer("busy"))
	tools := make([]store.Tool, nTools)
	for i := range tools {
		tools[i] = MkTool(fmt.Sprintf("t%02d", i), "v1")
	}
	MustRecordSuccess(t, db, s.ID, Verification(s, "j-init", At(0), tools...))

	// Workers 0, 3, 6, ... each own one tool and set its policy; 1, 4, 7,
	// ... re-verify with the same tools; 2, 5, 8, ... read.
	policies := []store.Policy{store.PolicyAllow, store.PolicyAsk, store.PolicyDeny}
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for i := range iters {
				switch w % 3 {
				case 0:
					name := tools[w/3].Name
					if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: name}, policies[i%3], fmt.Sprintf("w%d", w)); err != nil {
						t.Errorf("SetPolicy(%q, %q) = %v; want nil", s.ID, name, err)
						return
					}
					writes.Add(1)
				case 1:
					if err := db.RecordSuccess(ctx, s.ID, Verification(s, fmt.Sprintf("j-%d-%d", w, i), At(1+w*iters+i), tools...)); err != nil {
						t.Errorf("RecordSuccess(%q) = %v; want nil", s.ID, err)
						return
					}
					writes.Add(1)
				case 2:
					sums, err := db.Summaries(ctx)
					if err != nil || len(sums) != 1 || sums[0].Discovery.Status != store.StatusSuccess || sums[0].Discovery.ToolCount != nTools {
						t.Errorf("Summaries() = %+v, %v; want one successful record with %d tools", sums, err, nTools)
						return
					}
					list, err := db.Tools(ctx, s.ID)
					if err != nil || len(list) != nTools {
						t.Errorf("Tools(%q) = %d entries, %v; want %d, nil", s.ID, len(list), err, nTools)
						return
					}
					for _, e := range list {
						if e.State != store.ToolActive || e.Policy.Pin != e.Pin || e.Effective != e.Policy.Policy {
							t.Errorf("Tools(%q)[%s] = {State:%s Effective:%s Policy:%+v}; want active with its own pin", s.ID, e.Name, e.State, e.Effective, e.Policy)
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	if got, want := changes.Load(), 2+writes.Load(); got != want {
		t.Errorf("OnChange calls = %d; want %d (one per committed change)", got, want)
	}
	d := MustSummary(t, db, s.ID).Discovery
	if d.Status != store.StatusSuccess || d.ToolCount != nTools || d.Error != nil {
		t.Errorf("final Discovery = {Status:%s ToolCount:%d Error:%+v}; want {success %d <nil>}", d.Status, d.ToolCount, d.Error, nTools)
	}
	got := MustTools(t, db, s.ID)
	if len(got) != nTools {
		t.Fatalf("len(Tools(%q)) = %d; want %d", s.ID, len(got), nTools)
	}
	for i, tool := range tools {
		e := got[tool.Name]
		// Tools and record are written in one transaction, so the last
		// verification's time is on every tool.
		if !e.FirstSeen.Equal(At(0)) || !e.LastSeen.Equal(d.VerifiedAt) || e.State != store.ToolActive {
			t.Errorf("final Tools(%q)[%s] = {FirstSeen:%v LastSeen:%v State:%s}; want {%v %v active}", s.ID, tool.Name, e.FirstSeen, e.LastSeen, e.State, At(0), d.VerifiedAt)
		}
		wantPolicy, wantBy := store.PolicyAsk, store.PolicySetByDefault
		if w := i * 3; w < workers {
			wantPolicy, wantBy = policies[(iters-1)%3], fmt.Sprintf("w%d", w)
		}
		if e.Policy.Policy != wantPolicy || e.Policy.SetBy != wantBy || e.Policy.Pin != tool.Pin {
			t.Errorf("final Tools(%q)[%s].Policy = %+v; want {%s by %s at pin %.8s}", s.ID, tool.Name, e.Policy, wantPolicy, wantBy, tool.Pin)
		}
	}
}

// TestConfirmLaunch: a new server is unconfirmed (whatever the caller
// passed), confirmation survives edits that keep the launch and is lost by
// edits that change it, and a confirmation of an outdated launch fails.
func testConfirmLaunch(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := StdioServer("fs")
	s.LaunchConfirmed = s.LaunchHash() // a caller cannot pre-confirm
	got := MustCreate(t, db, s)
	if got.LaunchConfirmedNow() {
		t.Fatal("a new server's launch is confirmed; want unconfirmed")
	}
	shown := got.LaunchHash()
	if err := db.ConfirmLaunch(ctx, "fs", shown, ""); err != nil {
		t.Fatalf("ConfirmLaunch = %v; want nil", err)
	}
	if got, _ := db.Server(ctx, "fs"); !got.LaunchConfirmedNow() {
		t.Fatal("launch not confirmed after ConfirmLaunch")
	}

	edit := got
	edit.Name, edit.Env = "Files", map[string]string{"TOKEN": "rotated", "HOME": "/home/me"}
	edit.LaunchConfirmed = ""
	if err := db.UpdateServer(ctx, edit); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Server(ctx, "fs"); !got.LaunchConfirmedNow() {
		t.Error("renaming and rotating a secret lost the confirmation; want it kept")
	}

	edit.Args = append(edit.Args, "/home")
	if err := db.UpdateServer(ctx, edit); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Server(ctx, "fs"); got.LaunchConfirmedNow() {
		t.Error("a new argument kept the confirmation; want it needed again")
	}
	if err := db.ConfirmLaunch(ctx, "fs", shown, ""); !errors.Is(err, store.ErrLaunchChanged) {
		t.Errorf("ConfirmLaunch(outdated hash) = %v; want ErrLaunchChanged", err)
	}
	if err := db.ConfirmLaunch(ctx, "nope", shown, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ConfirmLaunch(unknown server) = %v; want ErrNotFound", err)
	}
}

// TestConfirmedLaunchKept: a confirmation keeps what was confirmed, secret
// values only as hashes; edits keep it (so a new confirmation can show
// what changed), a restart keeps it, the next confirmation replaces it,
// and a caller can neither set it on create nor change it on update.
func testConfirmedLaunchKept(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := StdioServer("kept")
	s.ConfirmedLaunch = &store.Launch{Command: "forged"}
	got := MustCreate(t, db, s)
	if got.ConfirmedLaunch != nil {
		t.Fatalf("a new server's ConfirmedLaunch = %+v; want nil", got.ConfirmedLaunch)
	}
	if err := db.ConfirmLaunch(ctx, "kept", got.LaunchHash(), "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	want := store.Launch{
		Transport: store.TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}, Cwd: "/srv",
		Env: map[string]string{"TOKEN": store.ValueHash("secret"), "HOME": store.ValueHash("/home/me")}, ConfirmedBy: "ann@example.com",
	}
	check := func(db store.Store, when string, want store.Launch) {
		t.Helper()
		got, err := db.Server(ctx, "kept")
		if err != nil {
			t.Fatal(err)
		}
		if got.ConfirmedLaunch == nil || got.ConfirmedLaunch.ConfirmedAt.IsZero() {
			t.Fatalf("%s: ConfirmedLaunch = %+v; want one with the time it was confirmed", when, got.ConfirmedLaunch)
		}
		l := *got.ConfirmedLaunch
		l.ConfirmedAt = time.Time{}
		if !reflect.DeepEqual(l, want) {
			t.Errorf("%s: ConfirmedLaunch = %+v; want %+v", when, got.ConfirmedLaunch, want)
		}
	}
	check(db, "after ConfirmLaunch", want)

	edit, _ := db.Server(ctx, "kept")
	edit.Args = []string{"-y", "@modelcontextprotocol/server-filesystem", "/home"}
	edit.Env = map[string]string{"TOKEN": "rotated"}
	edit.ConfirmedLaunch = &store.Launch{Command: "forged"}
	if err := db.UpdateServer(ctx, edit); err != nil {
		t.Fatal(err)
	}
	check(db, "after an edit", want)
	db = be.Reopen(t, db)
	check(db, "after a restart", want)

	now, _ := db.Server(ctx, "kept")
	if err := db.ConfirmLaunch(ctx, "kept", now.LaunchHash(), "bob@example.com"); err != nil {
		t.Fatal(err)
	}
	want.Args, want.Env, want.ConfirmedBy = edit.Args, map[string]string{"TOKEN": store.ValueHash("rotated")}, "bob@example.com"
	check(db, "after the next confirmation", want)
}

// allTools is every tool of every server, through Catalog.
func allTools(t *testing.T, db store.Store) ([]store.ToolEntry, error) {
	out := []store.ToolEntry{}
	_, err := db.Catalog(t.Context(), func(_ *store.Summary, e store.ToolEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// mustOpen opens a fresh store in a temporary directory and closes it when
// the test ends.
func mustOpen(t *testing.T) *DB {
	t.Helper()
	return mustOpenOpts(t, Options{})
}

func mustOpenOpts(t *testing.T, opts Options) *DB {
	t.Helper()
	return mustOpenPath(t, filepath.Join(t.TempDir(), "switchboard.db"), opts)
}

func mustOpenPath(t *testing.T, path string, opts Options) *DB {
	t.Helper()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close() = %v; want nil", err)
		}
	})
	return db
}

// t0 is the base of the fixed clock used for verification times.
var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func stdioServer(id string) Server {
	return Server{
		ID:            id,
		Name:          "Server " + id,
		Transport:     TransportStdio,
		Command:       "npx",
		Args:          []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"},
		Env:           map[string]string{"TOKEN": "secret", "HOME": "/home/me"},
		Cwd:           "/srv",
		TimeoutMS:     5000,
		DefaultPolicy: PolicyAsk,
		Enabled:       true,
	}
}

func mustCreate(t *testing.T, db *DB, s Server) Server {
	t.Helper()
	if err := db.CreateServer(s); err != nil {
		t.Fatalf("CreateServer(%q) = %v; want nil", s.ID, err)
	}
	got, err := db.Server(s.ID)
	if err != nil {
		t.Fatalf("Server(%q) = %v; want nil", s.ID, err)
	}
	return got
}

// mkTool returns a tool as discovery would hand it over: Raw is the whole
// object and Pin its SHA-256. version changes the description, and so the pin.
func mkTool(name, version string) Tool {
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
	return Tool{
		Name:        name,
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Raw:         raw,
		Pin:         hex.EncodeToString(sum[:]),
	}
}

// verification is a successful verification of s that finished at fin.
func verification(s Server, jobID string, fin time.Time, tools ...Tool) Verification {
	return Verification{
		JobID:           jobID,
		ConfigHash:      s.ConfigHash(),
		StartedAt:       fin.Add(-1500 * time.Millisecond),
		FinishedAt:      fin,
		Timings:         []PhaseTiming{{Phase: "initialize", MS: 1000}, {Phase: "tools/list", MS: 500}},
		ProtocolVersion: "2025-06-18",
		ServerName:      "fixture",
		ServerVersion:   "1.2.3",
		Capabilities:    json.RawMessage(`{"tools":{}}`),
		Instructions:    "be nice",
		Warnings:        []string{"tool name \"x\" appears more than once; kept the first definition"},
		Tools:           tools,
	}
}

func failure(s Server, jobID, status string, fin time.Time) Failure {
	return Failure{
		JobID:      jobID,
		ConfigHash: s.ConfigHash(),
		Status:     status,
		StartedAt:  fin.Add(-2 * time.Second),
		FinishedAt: fin,
		Timings:    []PhaseTiming{{Phase: "spawn", MS: 2000}},
		Error: VerifyError{
			Class:      "protocol",
			Phase:      "initialize",
			Message:    "server closed stdout during " + status,
			Suggestion: "Check the command.",
			StderrTail: "Error: cannot find module",
		},
	}
}

func mustRecordSuccess(t *testing.T, db *DB, id string, v Verification) {
	t.Helper()
	if err := db.RecordSuccess(id, v); err != nil {
		t.Fatalf("RecordSuccess(%q, %s) = %v; want nil", id, v.JobID, err)
	}
}

func mustSummary(t *testing.T, db *DB, id string) Summary {
	t.Helper()
	sum, err := db.Summary(id)
	if err != nil {
		t.Fatalf("Summary(%q) = %v; want nil", id, err)
	}
	return sum
}

// mustTools returns the server's tools by name, after checking that Tools
// returned them ordered by name.
func mustTools(t *testing.T, db *DB, id string) map[string]ToolEntry {
	t.Helper()
	list, err := db.Tools(id)
	if err != nil {
		t.Fatalf("Tools(%q) = %v; want nil", id, err)
	}
	names := make([]string, len(list))
	out := make(map[string]ToolEntry, len(list))
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
func entry(id string, tool Tool, state string, first, last time.Time, p Policy) ToolEntry {
	tool.ServerID = id
	tool.AgentName = agentName(id, tool.Name)
	tool.State = state
	tool.FirstSeen = first
	tool.LastSeen = last
	e := ToolEntry{Tool: tool, Policy: p, Effective: p.Policy}
	if state == ToolChanged {
		e.Effective = PolicyDeny
	}
	return e
}

// defaultPolicy is the policy a new tool gets on a server whose default is
// policy (initialPolicy, tested on its own in TestInitialPolicy).
func defaultPolicy(policy string, tool Tool, setAt time.Time) Policy {
	p := Policy{Pin: tool.Pin, SetBy: PolicySetByDefault, SetAt: setAt}
	p.Policy, p.Reason = initialPolicy(policy, tool.Annotations)
	return p
}

func checkEntry(t *testing.T, call string, got, want ToolEntry) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %+v; want %+v", call, got, want)
	}
}

func TestServerCRUD(t *testing.T) {
	db := mustOpen(t)

	in := stdioServer("files")
	before := time.Now()
	if err := db.CreateServer(in); err != nil {
		t.Fatalf("CreateServer(%q) = %v; want nil", in.ID, err)
	}
	after := time.Now()

	got, err := db.Server(in.ID)
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

	sum := mustSummary(t, db, in.ID)
	wantSum := Summary{Server: want, Discovery: Discovery{ServerID: in.ID, Status: StatusNever}}
	if !reflect.DeepEqual(sum, wantSum) {
		t.Errorf("Summary(%q) = %+v; want %+v", in.ID, sum, wantSum)
	}
	if tools, err := db.Tools(in.ID); err != nil || tools == nil || len(tools) != 0 {
		t.Errorf("Tools(%q) = %v, %v; want [], nil", in.ID, tools, err)
	}

	t.Run("duplicate id", func(t *testing.T) {
		dup := stdioServer("files")
		dup.Name = "Other"
		if err := db.CreateServer(dup); !errors.Is(err, ErrExists) {
			t.Errorf("CreateServer(duplicate %q) = %v; want ErrExists", dup.ID, err)
		}
		if got, _ := db.Server(in.ID); !reflect.DeepEqual(got, created) {
			t.Errorf("Server(%q) after duplicate create = %+v; want unchanged %+v", in.ID, got, created)
		}
	})

	t.Run("missing id", func(t *testing.T) {
		const id = "nope"
		if _, err := db.Server(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Server(%q) = %v; want ErrNotFound", id, err)
		}
		if _, err := db.Summary(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Summary(%q) = %v; want ErrNotFound", id, err)
		}
		if _, err := db.Tools(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Tools(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.UpdateServer(stdioServer(id)); !errors.Is(err, ErrNotFound) {
			t.Errorf("UpdateServer(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.DeleteServer(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("DeleteServer(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.MarkRunning(id, "job", at(0)); !errors.Is(err, ErrNotFound) {
			t.Errorf("MarkRunning(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.RecordSuccess(id, verification(stdioServer(id), "job", at(1))); !errors.Is(err, ErrNotFound) {
			t.Errorf("RecordSuccess(%q) = %v; want ErrNotFound", id, err)
		}
		if err := db.RecordFailure(id, failure(stdioServer(id), "job", StatusFailed, at(1))); !errors.Is(err, ErrNotFound) {
			t.Errorf("RecordFailure(%q) = %v; want ErrNotFound", id, err)
		}
		if _, err := db.Summary(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Summary(%q) after failed writes = %v; want ErrNotFound (nothing created)", id, err)
		}
	})

	t.Run("update keeps CreatedAt", func(t *testing.T) {
		up := stdioServer("files")
		up.Name = "Renamed"
		up.Args = []string{"--verbose"}
		up.Env = nil
		up.Headers = map[string]string{"X": "y"}
		up.DefaultPolicy = PolicyDeny
		up.Enabled = false
		up.CreatedAt = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC) // must be ignored
		if err := db.UpdateServer(up); err != nil {
			t.Fatalf("UpdateServer(%q) = %v; want nil", up.ID, err)
		}
		got, err := db.Server(up.ID)
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
		s := mustCreate(t, db, stdioServer("gone"))
		a, b := mkTool("read", "v1"), mkTool("write", "v1")
		mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(10), a, b))
		if _, err := db.SetPolicy(s.ID, "write", PolicyAllow, "dashboard"); err != nil {
			t.Fatalf("SetPolicy(%q, write) = %v; want nil", s.ID, err)
		}

		if err := db.DeleteServer(s.ID); err != nil {
			t.Fatalf("DeleteServer(%q) = %v; want nil", s.ID, err)
		}
		if _, err := db.Server(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Server(%q) after delete = %v; want ErrNotFound", s.ID, err)
		}
		if _, err := db.Summary(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Summary(%q) after delete = %v; want ErrNotFound", s.ID, err)
		}
		if _, err := db.Tools(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Tools(%q) after delete = %v; want ErrNotFound", s.ID, err)
		}
		if err := db.DeleteServer(s.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("DeleteServer(%q) twice = %v; want ErrNotFound", s.ID, err)
		}
		// Nothing is left behind under the id, even where no reader looks.
		err := db.bolt.View(func(tx *bolt.Tx) error {
			key := []byte(s.ID)
			for _, name := range [][]byte{bucketServers, bucketDiscovery} {
				if v := tx.Bucket(name).Get(key); v != nil {
					t.Errorf("bucket %s key %q after DeleteServer = %s; want absent", name, s.ID, v)
				}
			}
			for _, name := range [][]byte{bucketTools, bucketPolicies} {
				if tx.Bucket(name).Bucket(key) != nil {
					t.Errorf("bucket %s/%s after DeleteServer = present; want deleted", name, s.ID)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("bolt View = %v; want nil", err)
		}

		// Re-creating the id starts from nothing: no record, no tools, and
		// the old policy does not come back.
		again := mustCreate(t, db, stdioServer("gone"))
		sum := mustSummary(t, db, again.ID)
		if want := (Discovery{ServerID: again.ID, Status: StatusNever}); !reflect.DeepEqual(sum.Discovery, want) {
			t.Errorf("Summary(%q).Discovery after re-create = %+v; want %+v", again.ID, sum.Discovery, want)
		}
		if got := mustTools(t, db, again.ID); len(got) != 0 {
			t.Errorf("Tools(%q) after re-create = %v; want none", again.ID, got)
		}
		if _, err := db.SetPolicy(again.ID, "write", PolicyAllow, "dashboard"); !errors.Is(err, ErrToolNotFound) {
			t.Errorf("SetPolicy(%q, write) after re-create = %v; want ErrToolNotFound", again.ID, err)
		}
		mustRecordSuccess(t, db, again.ID, verification(again, "j2", at(20), b))
		got := mustTools(t, db, again.ID)
		checkEntry(t, "Tools(gone)[write] after re-create", got["write"],
			entry(again.ID, b, ToolActive, at(20), at(20), defaultPolicy(PolicyAsk, b, at(20))))
		if len(got) != 1 {
			t.Errorf("len(Tools(%q)) after re-create = %d; want 1", again.ID, len(got))
		}
	})
}

func TestSummariesOrderedAndEmptyNotNil(t *testing.T) {
	db := mustOpen(t)

	got, err := db.Summaries()
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Summaries() on empty store = %#v, %v; want []Summary{}, nil", got, err)
	}
	all, err := db.AllTools()
	if err != nil || all == nil || len(all) != 0 {
		t.Fatalf("AllTools() on empty store = %#v, %v; want []ToolEntry{}, nil", all, err)
	}

	for _, id := range []string{"zeta", "alpha", "m0x", "m-1", "m0", "beta"} {
		mustCreate(t, db, stdioServer(id))
	}
	if err := db.MarkRunning("beta", "job-b", at(5)); err != nil {
		t.Fatalf("MarkRunning(beta) = %v; want nil", err)
	}

	got, err = db.Summaries()
	if err != nil {
		t.Fatalf("Summaries() = %v; want nil", err)
	}
	var ids []string
	for _, sum := range got {
		ids = append(ids, sum.Server.ID)
		if sum.Discovery.ServerID != sum.Server.ID {
			t.Errorf("Summaries()[%s].Discovery.ServerID = %q; want %q", sum.Server.ID, sum.Discovery.ServerID, sum.Server.ID)
		}
		wantStatus := StatusNever
		if sum.Server.ID == "beta" {
			wantStatus = StatusRunning
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

func TestAllToolsGroupedByServer(t *testing.T) {
	db := mustOpen(t)
	b := mustCreate(t, db, stdioServer("b"))
	a := mustCreate(t, db, stdioServer("a"))
	mustCreate(t, db, stdioServer("c")) // never verified: contributes nothing
	mustRecordSuccess(t, db, "b", verification(b, "jb", at(1), mkTool("z", "v1"), mkTool("y", "v1")))
	mustRecordSuccess(t, db, "a", verification(a, "ja", at(2), mkTool("x", "v1")))

	all, err := db.AllTools()
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

func TestConfigHash(t *testing.T) {
	base := func() Server {
		s := stdioServer("fs")
		s.URL = "https://mcp.example.com/mcp"
		s.Headers = map[string]string{"Authorization": "Bearer abc", "X-Team": "red"}
		return s
	}
	baseHash := base().ConfigHash()
	if len(baseHash) != 64 || strings.Trim(baseHash, "0123456789abcdef") != "" {
		t.Fatalf("ConfigHash() = %q; want 64 lowercase hex digits", baseHash)
	}

	tests := []struct {
		name       string
		edit       func(s *Server)
		wantChange bool
	}{
		{"transport", func(s *Server) { s.Transport = TransportHTTP }, true},
		{"command", func(s *Server) { s.Command = "uvx" }, true},
		{"args value", func(s *Server) { s.Args[2] = "/var" }, true},
		{"args appended", func(s *Server) { s.Args = append(s.Args, "--ro") }, true},
		{"args reordered", func(s *Server) { s.Args[0], s.Args[1] = s.Args[1], s.Args[0] }, true},
		{"cwd", func(s *Server) { s.Cwd = "/srv2" }, true},
		{"env key renamed", func(s *Server) { delete(s.Env, "TOKEN"); s.Env["TOKEN2"] = "secret" }, true},
		{"env key added", func(s *Server) { s.Env["DEBUG"] = "" }, true},
		{"env value", func(s *Server) { s.Env["TOKEN"] = "secret2" }, true},
		{"url", func(s *Server) { s.URL = "https://mcp.example.com/other" }, true},
		{"header key", func(s *Server) { delete(s.Headers, "X-Team"); s.Headers["X-Group"] = "red" }, true},
		{"header value", func(s *Server) { s.Headers["Authorization"] = "Bearer abd" }, true},
		{"header removed", func(s *Server) { delete(s.Headers, "X-Team") }, true},

		{"name", func(s *Server) { s.Name = "Another name" }, false},
		{"default policy", func(s *Server) { s.DefaultPolicy = PolicyDeny }, false},
		{"timeout", func(s *Server) { s.TimeoutMS = 60000 }, false},
		{"enabled", func(s *Server) { s.Enabled = false }, false},
		{"timestamps", func(s *Server) { s.CreatedAt, s.UpdatedAt = at(1), at(2) }, false},
		{"env rebuilt in another order", func(s *Server) {
			s.Env = map[string]string{}
			s.Env["HOME"] = "/home/me"
			s.Env["TOKEN"] = "secret"
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.edit(&s)
			got := s.ConfigHash()
			if changed := got != baseHash; changed != tt.wantChange {
				t.Errorf("ConfigHash(%s edited) = %s, base %s: changed = %v; want %v", tt.name, got, baseHash, changed, tt.wantChange)
			}
		})
	}
}

func TestConfigHashBoundaries(t *testing.T) {
	stdio := func(command string, args ...string) Server {
		return Server{Transport: TransportStdio, Command: command, Args: args}
	}
	tests := []struct {
		name      string
		a, b      Server
		wantEqual bool
	}{
		{"one arg with space vs two args", stdio("x", "a b"), stdio("x", "a", "b"), false},
		{"joined vs split args", stdio("x", "ab"), stdio("x", "a", "b"), false},
		{"trailing empty arg", stdio("x", "a", ""), stdio("x", "a"), false},
		{"one empty arg vs none", stdio("x", ""), stdio("x"), false},
		{"length-prefix lookalike", stdio("x", "1:a"), stdio("x", "1", "a"), false},
		{"colon moved between args", stdio("x", "a:", "b"), stdio("x", "a", ":b"), false},
		{"text moved between command and cwd", Server{Command: "ab", Cwd: "c"}, Server{Command: "a", Cwd: "bc"}, false},
		{"arg moved into command", stdio("npx -y"), stdio("npx", "-y"), false},
		{"command vs first arg", stdio("", "npx"), stdio("npx"), false},
		{"cwd vs url", Server{Cwd: "x"}, Server{URL: "x"}, false},
		{"env vs headers", Server{Env: map[string]string{"A": "1"}}, Server{Headers: map[string]string{"A": "1"}}, false},
		{"env key/value boundary", Server{Env: map[string]string{"A=1": ""}}, Server{Env: map[string]string{"A": "=1"}}, false},
		{"env values swapped", Server{Env: map[string]string{"A": "1", "B": "2"}}, Server{Env: map[string]string{"A": "2", "B": "1"}}, false},
		{"nil vs empty args", stdio("x"), Server{Transport: TransportStdio, Command: "x", Args: []string{}}, true},
		{"nil vs empty maps", Server{}, Server{Env: map[string]string{}, Headers: map[string]string{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, hb := tt.a.ConfigHash(), tt.b.ConfigHash()
			if (ha == hb) != tt.wantEqual {
				t.Errorf("ConfigHash(%+v) == ConfigHash(%+v) is %v; want %v", tt.a, tt.b, ha == hb, tt.wantEqual)
			}
		})
	}
}

// The hash the store computes from what it read back must match the hash
// discovery computed from what it was given, or every verification of a
// server with empty args/env would be discarded as "config changed".
func TestConfigHashSurvivesStoreRoundTrip(t *testing.T) {
	db := mustOpen(t)
	tests := []struct {
		name string
		s    Server
	}{
		{"full stdio", stdioServer("full")},
		{"empty non-nil collections", Server{ID: "empty", Transport: TransportStdio, Command: "x", Args: []string{}, Env: map[string]string{}, Headers: map[string]string{}, DefaultPolicy: PolicyAsk}},
		{"remote", Server{ID: "remote", Transport: TransportHTTP, URL: "https://x.example/mcp", Headers: map[string]string{"Authorization": "Bearer t"}, DefaultPolicy: PolicyAsk}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustCreate(t, db, tt.s)
			if got.ConfigHash() != tt.s.ConfigHash() {
				t.Errorf("Server(%q).ConfigHash() = %s; want %s (as created)", tt.s.ID, got.ConfigHash(), tt.s.ConfigHash())
			}
			if err := db.RecordSuccess(tt.s.ID, verification(tt.s, "j", at(1))); err != nil {
				t.Errorf("RecordSuccess(%q) with the creation-time hash = %v; want nil", tt.s.ID, err)
			}
		})
	}
}

func TestRecordSuccessMerge(t *testing.T) {
	db := mustOpen(t)
	in := stdioServer("files")
	in.DefaultPolicy = PolicyAllow
	s := mustCreate(t, db, in)

	readV1, writeV1, listV1 := mkTool("read", "v1"), mkTool("write", "v1"), mkTool("list", "v1")
	readV2 := mkTool("read", "v2")

	// First verification: every tool is new and gets the server's default.
	v1 := verification(s, "job-1", at(10), readV1, writeV1)
	mustRecordSuccess(t, db, s.ID, v1)

	sum := mustSummary(t, db, s.ID)
	if len(sum.Discovery.ToolsHash) != 64 {
		t.Errorf("Summary(%q).Discovery.ToolsHash = %q; want 64 hex digits", s.ID, sum.Discovery.ToolsHash)
	}
	wantD := Discovery{
		ServerID:        s.ID,
		Status:          StatusSuccess,
		JobID:           "job-1",
		LastAttemptAt:   v1.StartedAt,
		VerifiedAt:      at(10),
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
		Delta:           &Delta{Added: 2},
	}
	if !reflect.DeepEqual(sum.Discovery, wantD) {
		t.Errorf("Summary(%q).Discovery after first success = %+v; want %+v", s.ID, sum.Discovery, wantD)
	}
	if sum.Discovery.Stale() {
		t.Errorf("Summary(%q).Discovery.Stale() after success = true; want false", s.ID)
	}
	hash1 := sum.Discovery.ToolsHash

	got := mustTools(t, db, s.ID)
	if len(got) != 2 {
		t.Fatalf("len(Tools(%q)) = %d; want 2", s.ID, len(got))
	}
	checkEntry(t, "Tools(files)[read] after v1", got["read"],
		entry(s.ID, readV1, ToolActive, at(10), at(10), defaultPolicy(PolicyAllow, readV1, at(10))))
	checkEntry(t, "Tools(files)[write] after v1", got["write"],
		entry(s.ID, writeV1, ToolActive, at(10), at(10), defaultPolicy(PolicyAllow, writeV1, at(10))))

	// A person denies write; then the default changes (not part of the
	// config hash), so only tools discovered from now on get "ask".
	setWrite, err := db.SetPolicy(s.ID, "write", PolicyDeny, "dashboard")
	if err != nil {
		t.Fatalf("SetPolicy(%q, write, deny) = %v; want nil", s.ID, err)
	}
	up := s
	up.DefaultPolicy = PolicyAsk
	if err := db.UpdateServer(up); err != nil {
		t.Fatalf("UpdateServer(%q) = %v; want nil", s.ID, err)
	}

	// Second verification: write vanished, list is new, read unchanged.
	mustRecordSuccess(t, db, s.ID, verification(up, "job-2", at(20), listV1, readV1))
	got = mustTools(t, db, s.ID)
	if len(got) != 3 {
		t.Fatalf("len(Tools(%q)) after v2 = %d; want 3 (missing tools are kept)", s.ID, len(got))
	}
	checkEntry(t, "Tools(files)[read] after v2", got["read"],
		entry(s.ID, readV1, ToolActive, at(10), at(20), defaultPolicy(PolicyAllow, readV1, at(10))))
	checkEntry(t, "Tools(files)[write] after v2", got["write"],
		entry(s.ID, writeV1, ToolMissing, at(10), at(10), setWrite.Policy))
	checkEntry(t, "Tools(files)[list] after v2", got["list"],
		entry(s.ID, listV1, ToolActive, at(20), at(20), defaultPolicy(PolicyAsk, listV1, at(20))))
	sum = mustSummary(t, db, s.ID)
	if sum.Discovery.ToolCount != 2 || sum.Discovery.JobID != "job-2" || !sum.Discovery.VerifiedAt.Equal(at(20)) {
		t.Errorf("Summary(%q).Discovery after v2 = {ToolCount:%d JobID:%q VerifiedAt:%v}; want {2 job-2 %v}",
			s.ID, sum.Discovery.ToolCount, sum.Discovery.JobID, sum.Discovery.VerifiedAt, at(20))
	}
	if sum.Discovery.ToolsHash == hash1 {
		t.Errorf("Summary(%q).Discovery.ToolsHash after the tool set changed = %s; want different from %s", s.ID, sum.Discovery.ToolsHash, hash1)
	}

	// Third verification: write comes back with the same pin (active
	// again, person's policy intact), read's definition changed (changed,
	// effectively denied, policy untouched), list vanished.
	mustRecordSuccess(t, db, s.ID, verification(up, "job-3", at(30), readV2, writeV1))
	got = mustTools(t, db, s.ID)
	checkEntry(t, "Tools(files)[write] after v3", got["write"],
		entry(s.ID, writeV1, ToolActive, at(10), at(30), setWrite.Policy))
	checkEntry(t, "Tools(files)[read] after v3", got["read"],
		entry(s.ID, readV2, ToolChanged, at(10), at(30), defaultPolicy(PolicyAllow, readV1, at(10))))
	checkEntry(t, "Tools(files)[list] after v3", got["list"],
		entry(s.ID, listV1, ToolMissing, at(20), at(20), defaultPolicy(PolicyAsk, listV1, at(20))))
	if e := got["read"]; e.Effective != PolicyDeny || e.Policy.Policy != PolicyAsk {
		t.Errorf("Tools(files)[read] after pin change: Effective = %q, Policy = %q; want deny, ask (allow raised by the missing annotations)", e.Effective, e.Policy.Policy)
	}

	// Fourth verification: read reverts to the approved definition.
	mustRecordSuccess(t, db, s.ID, verification(up, "job-4", at(40), readV1, writeV1))
	got = mustTools(t, db, s.ID)
	checkEntry(t, "Tools(files)[read] after v4", got["read"],
		entry(s.ID, readV1, ToolActive, at(10), at(40), defaultPolicy(PolicyAllow, readV1, at(10))))
}

func TestToolsHash(t *testing.T) {
	db := mustOpen(t)
	a, b, c := mkTool("a", "v1"), mkTool("b", "v1"), mkTool("c", "v1")
	bChanged := mkTool("b", "v2")

	tests := []struct {
		name  string
		tools []Tool
	}{
		{"abc", []Tool{a, b, c}},
		{"cab", []Tool{c, a, b}},
		{"bca", []Tool{b, c, a}},
		{"b changed", []Tool{a, bChanged, c}},
		{"ab", []Tool{a, b}},
	}
	hashes := map[string]string{}
	for i, tt := range tests {
		s := mustCreate(t, db, stdioServer(fmt.Sprintf("s%d", i)))
		mustRecordSuccess(t, db, s.ID, verification(s, "j", at(1), tt.tools...))
		d := mustSummary(t, db, s.ID).Discovery
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
	s0, _ := db.Server("s0")
	mustRecordSuccess(t, db, "s0", verification(s0, "j2", at(2), c, b, a))
	if got := mustSummary(t, db, "s0").Discovery.ToolsHash; got != hashes["abc"] {
		t.Errorf("ToolsHash after re-verifying the same tools = %s; want %s", got, hashes["abc"])
	}
}

func TestPolicySurvivesReverification(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("files"))
	read, write := mkTool("read", "v1"), mkTool("write", "v1")
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(10), read, write))

	before := time.Now()
	e, err := db.SetPolicy(s.ID, "write", PolicyDeny, "dashboard")
	if err != nil {
		t.Fatalf("SetPolicy(%q, write, deny, dashboard) = _, %v; want nil", s.ID, err)
	}
	if e.Policy.SetAt.Before(before) || e.Policy.SetAt.Location() != time.UTC {
		t.Errorf("SetPolicy(...).Policy.SetAt = %v; want UTC, not before %v", e.Policy.SetAt, before)
	}
	wantSet := entry(s.ID, write, ToolActive, at(10), at(10),
		Policy{Policy: PolicyDeny, Pin: write.Pin, SetBy: "dashboard", SetAt: e.Policy.SetAt})
	checkEntry(t, "SetPolicy(files, write, deny, dashboard)", e, wantSet)
	checkEntry(t, "Tools(files)[write] after SetPolicy", mustTools(t, db, s.ID)["write"], wantSet)

	for i, fin := range []time.Time{at(20), at(30)} {
		mustRecordSuccess(t, db, s.ID, verification(s, fmt.Sprintf("j%d", i+2), fin, write, read))
		got := mustTools(t, db, s.ID)
		wantWrite := wantSet
		wantWrite.LastSeen = fin
		checkEntry(t, fmt.Sprintf("Tools(files)[write] after re-verification %d", i+1), got["write"], wantWrite)
		checkEntry(t, fmt.Sprintf("Tools(files)[read] after re-verification %d", i+1), got["read"],
			entry(s.ID, read, ToolActive, at(10), fin, defaultPolicy(PolicyAsk, read, at(10))))
	}
}

// Setting a policy on a changed tool does not approve the change: the
// tool stays changed (denied) until its new version is approved, at the
// pin the person was shown; the policy is kept through the approval.
func TestSetPolicyDoesNotApproveChangedTool(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("files"))
	v1, v2, v3 := mkTool("exec", "v1"), mkTool("exec", "v2"), mkTool("exec", "v3")
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(10), v1))
	if _, err := db.SetPolicy(s.ID, "exec", PolicyAllow, "alice"); err != nil {
		t.Fatalf("SetPolicy(%q, exec, allow) = %v; want nil", s.ID, err)
	}
	mustRecordSuccess(t, db, s.ID, verification(s, "j2", at(20), v2))
	if e := mustTools(t, db, s.ID)["exec"]; e.State != ToolChanged || e.Effective != PolicyDeny || e.Policy.Policy != PolicyAllow || e.Policy.Pin != v1.Pin {
		t.Fatalf("Tools(files)[exec] after pin change = {State:%s Effective:%s Policy:%s Pin:%.8s}; want {changed deny allow %.8s}",
			e.State, e.Effective, e.Policy.Policy, e.Policy.Pin, v1.Pin)
	}

	e, err := db.SetPolicy(s.ID, "exec", PolicyAsk, "bob")
	if err != nil {
		t.Fatalf("SetPolicy(%q, exec, ask, bob) = %v; want nil", s.ID, err)
	}
	want := entry(s.ID, v2, ToolChanged, at(10), at(20), Policy{Policy: PolicyAsk, Pin: v1.Pin, SetBy: "bob", SetAt: e.Policy.SetAt})
	checkEntry(t, "SetPolicy(files, exec, ask, bob) on a changed tool", e, want)
	checkEntry(t, "Tools(files)[exec] after SetPolicy", mustTools(t, db, s.ID)["exec"], want)

	// The diff shows v1 (approved) against v2 (current).
	cur, approved, err := db.ToolVersions(s.ID, "exec")
	if err != nil || approved == nil || approved.Pin != v1.Pin || approved.Description != v1.Description || cur.Pin != v2.Pin {
		t.Fatalf("ToolVersions(files, exec) = %.8s, %+v, %v; want current %.8s and approved v1 %.8s", cur.Pin, approved, err, v2.Pin, v1.Pin)
	}

	// Approving a version the person was not shown fails, and changes nothing.
	if _, err := db.ApproveTool(s.ID, "exec", v3.Pin, "bob"); !errors.Is(err, ErrPinMismatch) {
		t.Errorf("ApproveTool(files, exec, <other pin>) = %v; want ErrPinMismatch", err)
	}
	checkEntry(t, "Tools(files)[exec] after a refused approval", mustTools(t, db, s.ID)["exec"], want)

	e, err = db.ApproveTool(s.ID, "exec", v2.Pin, "carol")
	if err != nil {
		t.Fatalf("ApproveTool(files, exec, v2) = %v; want nil", err)
	}
	want = entry(s.ID, v2, ToolActive, at(10), at(20), Policy{Policy: PolicyAsk, Pin: v2.Pin, SetBy: "carol", SetAt: e.Policy.SetAt})
	checkEntry(t, "ApproveTool(files, exec, v2)", e, want)
	checkEntry(t, "Tools(files)[exec] after approval", mustTools(t, db, s.ID)["exec"], want)
	if _, approved, _ := db.ToolVersions(s.ID, "exec"); approved == nil || approved.Pin != v2.Pin {
		t.Errorf("ToolVersions(files, exec) after approval: approved = %+v; want v2", approved)
	}
	if _, err := db.ApproveTool(s.ID, "exec", v2.Pin, "carol"); !errors.Is(err, ErrNotChanged) {
		t.Errorf("ApproveTool again = %v; want ErrNotChanged", err)
	}

	// The approval is of v2: re-verifying v2 keeps it active.
	mustRecordSuccess(t, db, s.ID, verification(s, "j3", at(30), v2))
	want.LastSeen = at(30)
	checkEntry(t, "Tools(files)[exec] after re-verifying the approved pin", mustTools(t, db, s.ID)["exec"], want)
}

func TestSetPolicyErrors(t *testing.T) {
	db := mustOpen(t)
	verified := mustCreate(t, db, stdioServer("verified"))
	mustRecordSuccess(t, db, verified.ID, verification(verified, "j", at(1), mkTool("read", "v1")))
	mustCreate(t, db, stdioServer("fresh"))

	tests := []struct {
		name    string
		id      string
		tool    string
		wantErr error
	}{
		{"no server", "nope", "read", ErrNotFound},
		{"server never verified", "fresh", "read", ErrToolNotFound},
		{"unknown tool", "verified", "write", ErrToolNotFound},
		{"tool of another server", "fresh", "read", ErrToolNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.SetPolicy(tt.id, tt.tool, PolicyDeny, "dashboard"); !errors.Is(err, tt.wantErr) {
				t.Errorf("SetPolicy(%q, %q) = %v; want %v", tt.id, tt.tool, err, tt.wantErr)
			}
		})
	}
	if e := mustTools(t, db, "verified")["read"]; e.Policy.SetBy != PolicySetByDefault || e.Policy.Policy != PolicyAsk {
		t.Errorf("Tools(verified)[read].Policy after failed SetPolicy calls = %+v; want the untouched default", e.Policy)
	}
}

func TestDiscoveryStale(t *testing.T) {
	tests := []struct {
		status   string
		verified bool
		want     bool
	}{
		{StatusNever, false, false},
		{StatusRunning, false, false},
		{StatusFailed, false, false},
		{StatusTimeout, false, false},
		{StatusCancelled, false, false},
		{StatusInterrupted, false, false},
		{StatusSuccess, true, false},
		{StatusRunning, true, false},
		{StatusFailed, true, true},
		{StatusTimeout, true, true},
		{StatusCancelled, true, true},
		{StatusInterrupted, true, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s verified=%v", tt.status, tt.verified), func(t *testing.T) {
			d := Discovery{Status: tt.status}
			if tt.verified {
				d.VerifiedAt = at(1)
			}
			if got := d.Stale(); got != tt.want {
				t.Errorf("Discovery{Status:%s, verified:%v}.Stale() = %v; want %v", tt.status, tt.verified, got, tt.want)
			}
		})
	}
}

func TestFailureKeepsLastGoodTools(t *testing.T) {
	for _, status := range []string{StatusFailed, StatusTimeout, StatusCancelled} {
		t.Run(status, func(t *testing.T) {
			db := mustOpen(t)
			s := mustCreate(t, db, stdioServer("files"))

			// Before any success a failure is not stale: there is nothing to serve.
			first := failure(s, "job-0", status, at(5))
			if err := db.RecordFailure(s.ID, first); err != nil {
				t.Fatalf("RecordFailure(%q, %s) = %v; want nil", s.ID, status, err)
			}
			d := mustSummary(t, db, s.ID).Discovery
			if d.Status != status || d.Stale() || !d.VerifiedAt.IsZero() || d.Error == nil || *d.Error != first.Error {
				t.Errorf("Discovery after a first %s = {Status:%s Stale:%v VerifiedAt:%v Error:%+v}; want {%s false zero %+v}",
					status, d.Status, d.Stale(), d.VerifiedAt, d.Error, status, first.Error)
			}

			mustRecordSuccess(t, db, s.ID, verification(s, "job-1", at(10), mkTool("read", "v1"), mkTool("write", "v1")))
			if _, err := db.SetPolicy(s.ID, "write", PolicyDeny, "dashboard"); err != nil {
				t.Fatalf("SetPolicy = %v; want nil", err)
			}
			okSum := mustSummary(t, db, s.ID)
			if okSum.Discovery.Stale() || okSum.Discovery.Error != nil {
				t.Errorf("Discovery after success = {Stale:%v Error:%+v}; want {false <nil>} (success clears the earlier failure)", okSum.Discovery.Stale(), okSum.Discovery.Error)
			}
			okTools, err := db.Tools(s.ID)
			if err != nil {
				t.Fatalf("Tools(%q) = %v; want nil", s.ID, err)
			}

			if err := db.MarkRunning(s.ID, "job-2", at(19)); err != nil {
				t.Fatalf("MarkRunning(%q) = %v; want nil", s.ID, err)
			}
			f := failure(s, "job-2", status, at(21))
			if err := db.RecordFailure(s.ID, f); err != nil {
				t.Fatalf("RecordFailure(%q, %s) = %v; want nil", s.ID, status, err)
			}

			gotTools, err := db.Tools(s.ID)
			if err != nil {
				t.Fatalf("Tools(%q) after %s = %v; want nil", s.ID, status, err)
			}
			if !reflect.DeepEqual(gotTools, okTools) {
				t.Errorf("Tools(%q) after %s = %+v; want unchanged %+v", s.ID, status, gotTools, okTools)
			}

			got := mustSummary(t, db, s.ID).Discovery
			want := okSum.Discovery
			want.Status = status
			want.JobID = "job-2"
			want.LastAttemptAt = f.StartedAt
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

func TestConfigChangedWhileVerifying(t *testing.T) {
	tests := []struct {
		name   string
		record func(db *DB, old Server) error
	}{
		{"RecordSuccess", func(db *DB, old Server) error {
			return db.RecordSuccess(old.ID, verification(old, "job-2", at(30), mkTool("read", "v2"), mkTool("evil", "v1")))
		}},
		{"RecordFailure", func(db *DB, old Server) error {
			return db.RecordFailure(old.ID, failure(old, "job-2", StatusFailed, at(30)))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := mustOpen(t)
			old := mustCreate(t, db, stdioServer("files"))
			mustRecordSuccess(t, db, old.ID, verification(old, "job-1", at(10), mkTool("read", "v1")))
			before := mustSummary(t, db, old.ID).Discovery
			beforeTools, err := db.Tools(old.ID)
			if err != nil {
				t.Fatalf("Tools(%q) = %v; want nil", old.ID, err)
			}

			if err := db.MarkRunning(old.ID, "job-2", at(20)); err != nil {
				t.Fatalf("MarkRunning(%q) = %v; want nil", old.ID, err)
			}
			changed := old
			changed.Command = "/usr/bin/other-server"
			if err := db.UpdateServer(changed); err != nil {
				t.Fatalf("UpdateServer(%q) = %v; want nil", old.ID, err)
			}

			if err := tt.record(db, old); !errors.Is(err, ErrConfigChanged) {
				t.Fatalf("%s(%q) with the old config hash = %v; want ErrConfigChanged", tt.name, old.ID, err)
			}

			gotTools, err := db.Tools(old.ID)
			if err != nil {
				t.Fatalf("Tools(%q) = %v; want nil", old.ID, err)
			}
			if !reflect.DeepEqual(gotTools, beforeTools) {
				t.Errorf("Tools(%q) after discarded %s = %+v; want unchanged %+v", old.ID, tt.name, gotTools, beforeTools)
			}
			if _, err := db.SetPolicy(old.ID, "evil", PolicyAllow, "x"); !errors.Is(err, ErrToolNotFound) {
				t.Errorf("SetPolicy(%q, evil) after discarded %s = %v; want ErrToolNotFound", old.ID, tt.name, err)
			}

			got := mustSummary(t, db, old.ID).Discovery
			if got.Status != StatusCancelled {
				t.Errorf("Discovery.Status after discarded %s = %q; want %q", tt.name, got.Status, StatusCancelled)
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
			mustRecordSuccess(t, db, changed.ID, verification(changed, "job-3", at(40), mkTool("read", "v2")))
			if d := mustSummary(t, db, changed.ID).Discovery; d.Status != StatusSuccess || d.ConfigHash != changed.ConfigHash() || d.Error != nil {
				t.Errorf("Discovery after verifying the new config = {Status:%s ConfigHash:%.8s Error:%+v}; want {success %.8s <nil>}", d.Status, d.ConfigHash, d.Error, changed.ConfigHash())
			}
		})
	}
}

// Edits that do not change what the server is must not discard a running
// verification.
func TestRenameWhileVerifyingIsAccepted(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("files"))
	if err := db.MarkRunning(s.ID, "job-1", at(1)); err != nil {
		t.Fatalf("MarkRunning = %v; want nil", err)
	}
	renamed := s
	renamed.Name, renamed.DefaultPolicy, renamed.TimeoutMS, renamed.Enabled = "Renamed", PolicyDeny, 1, false
	if err := db.UpdateServer(renamed); err != nil {
		t.Fatalf("UpdateServer = %v; want nil", err)
	}
	if err := db.RecordSuccess(s.ID, verification(s, "job-1", at(2), mkTool("read", "v1"))); err != nil {
		t.Fatalf("RecordSuccess after a rename = %v; want nil", err)
	}
	if e := mustTools(t, db, s.ID)["read"]; e.Policy.Policy != PolicyDeny {
		t.Errorf("Tools(files)[read].Policy.Policy = %q; want %q (the updated default)", e.Policy.Policy, PolicyDeny)
	}
}

// observation is what an OnChange callback saw when it ran.
type observation struct {
	change   Change
	sum      Summary
	sumErr   error
	tools    map[string]ToolEntry
	toolsErr error
}

func TestOnChangeAfterCommit(t *testing.T) {
	var (
		db  *DB
		mu  sync.Mutex
		obs []observation
	)
	db = mustOpenOpts(t, Options{OnChange: func(c Change) {
		// Runs after the commit: a fresh read must already see the change.
		o := observation{change: c}
		o.sum, o.sumErr = db.Summary(c.ServerID)
		list, err := db.Tools(c.ServerID)
		o.toolsErr = err
		o.tools = map[string]ToolEntry{}
		for _, e := range list {
			o.tools[e.Name] = e
		}
		mu.Lock()
		obs = append(obs, o)
		mu.Unlock()
	}})
	take := func() []observation {
		mu.Lock()
		defer mu.Unlock()
		out := obs
		obs = nil
		return out
	}

	s := stdioServer("files")
	read := mkTool("read", "v1")
	tests := []struct {
		name    string
		op      func() error
		wantErr error
		want    *Change // nil: OnChange must not be called
		check   func(t *testing.T, o observation)
	}{
		{
			name: "CreateServer",
			op:   func() error { return db.CreateServer(s) },
			want: &Change{ServerID: "files", Created: true},
			check: func(t *testing.T, o observation) {
				if o.sumErr != nil || o.sum.Server.Name != s.Name || o.sum.Discovery.Status != StatusNever {
					t.Errorf("Summary(files) inside OnChange = %+v, %v; want the new server", o.sum, o.sumErr)
				}
			},
		},
		{
			name:    "CreateServer duplicate",
			op:      func() error { return db.CreateServer(s) },
			wantErr: ErrExists,
		},
		{
			name: "UpdateServer",
			op: func() error {
				up := s
				up.Name = "Renamed"
				return db.UpdateServer(up)
			},
			want: &Change{ServerID: "files"},
			check: func(t *testing.T, o observation) {
				if o.sumErr != nil || o.sum.Server.Name != "Renamed" {
					t.Errorf("Summary(files).Server.Name inside OnChange = %q, %v; want Renamed", o.sum.Server.Name, o.sumErr)
				}
			},
		},
		{
			name:    "UpdateServer missing",
			op:      func() error { return db.UpdateServer(stdioServer("nope")) },
			wantErr: ErrNotFound,
		},
		{
			name: "MarkRunning",
			op:   func() error { return db.MarkRunning("files", "job-1", at(1)) },
			want: &Change{ServerID: "files"},
			check: func(t *testing.T, o observation) {
				if o.sum.Discovery.Status != StatusRunning || o.sum.Discovery.JobID != "job-1" {
					t.Errorf("Summary(files).Discovery inside OnChange = {%s %s}; want {running job-1}", o.sum.Discovery.Status, o.sum.Discovery.JobID)
				}
			},
		},
		{
			name:    "MarkRunning missing",
			op:      func() error { return db.MarkRunning("nope", "job-x", at(1)) },
			wantErr: ErrNotFound,
		},
		{
			name: "RecordSuccess",
			op:   func() error { return db.RecordSuccess("files", verification(s, "job-1", at(2), read)) },
			want: &Change{ServerID: "files", Tools: true, History: true},
			check: func(t *testing.T, o observation) {
				if o.sum.Discovery.Status != StatusSuccess || o.sum.Discovery.ToolCount != 1 {
					t.Errorf("Summary(files).Discovery inside OnChange = {%s %d}; want {success 1}", o.sum.Discovery.Status, o.sum.Discovery.ToolCount)
				}
				if e, ok := o.tools["read"]; o.toolsErr != nil || !ok || e.Pin != read.Pin {
					t.Errorf("Tools(files) inside OnChange = %v, %v; want the new tool read", o.tools, o.toolsErr)
				}
			},
		},
		{
			name:    "RecordSuccess missing",
			op:      func() error { return db.RecordSuccess("nope", verification(stdioServer("nope"), "j", at(2))) },
			wantErr: ErrNotFound,
		},
		{
			name: "SetPolicy",
			op: func() error {
				_, err := db.SetPolicy("files", "read", PolicyDeny, "dashboard")
				return err
			},
			want: &Change{ServerID: "files", Tools: true},
			check: func(t *testing.T, o observation) {
				if e := o.tools["read"]; e.Policy.Policy != PolicyDeny || e.Policy.SetBy != "dashboard" {
					t.Errorf("Tools(files)[read].Policy inside OnChange = %+v; want deny by dashboard", e.Policy)
				}
			},
		},
		{
			name: "SetPolicy unknown tool",
			op: func() error {
				_, err := db.SetPolicy("files", "nope", PolicyDeny, "dashboard")
				return err
			},
			wantErr: ErrToolNotFound,
		},
		{
			name: "SetPolicy missing server",
			op: func() error {
				_, err := db.SetPolicy("nope", "read", PolicyDeny, "dashboard")
				return err
			},
			wantErr: ErrNotFound,
		},
		{
			name: "RecordFailure",
			op:   func() error { return db.RecordFailure("files", failure(s, "job-2", StatusTimeout, at(3))) },
			want: &Change{ServerID: "files", History: true},
			check: func(t *testing.T, o observation) {
				if o.sum.Discovery.Status != StatusTimeout || !o.sum.Discovery.Stale() {
					t.Errorf("Summary(files).Discovery inside OnChange = {%s stale=%v}; want {timeout stale=true}", o.sum.Discovery.Status, o.sum.Discovery.Stale())
				}
			},
		},
		{
			name:    "RecordFailure missing",
			op:      func() error { return db.RecordFailure("nope", failure(stdioServer("nope"), "j", StatusFailed, at(3))) },
			wantErr: ErrNotFound,
		},
		{
			name: "DeleteServer",
			op:   func() error { return db.DeleteServer("files") },
			want: &Change{ServerID: "files", Deleted: true},
			check: func(t *testing.T, o observation) {
				if !errors.Is(o.sumErr, ErrNotFound) || !errors.Is(o.toolsErr, ErrNotFound) {
					t.Errorf("Summary, Tools(files) inside OnChange = %v, %v; want ErrNotFound, ErrNotFound", o.sumErr, o.toolsErr)
				}
			},
		},
		{
			name:    "DeleteServer missing",
			op:      func() error { return db.DeleteServer("files") },
			wantErr: ErrNotFound,
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
					t.Errorf("OnChange calls after failed %s = %+v; want none", tt.name, got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("OnChange calls after %s = %d; want 1", tt.name, len(got))
			}
			if got[0].change != *tt.want {
				t.Errorf("OnChange(%s) = %+v; want %+v", tt.name, got[0].change, *tt.want)
			}
			tt.check(t, got[0])
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	const (
		workers = 20
		iters   = 30
		nTools  = 10
	)
	var changes atomic.Int64
	db := mustOpenOpts(t, Options{OnChange: func(Change) { changes.Add(1) }})
	s := mustCreate(t, db, stdioServer("busy"))
	tools := make([]Tool, nTools)
	for i := range tools {
		tools[i] = mkTool(fmt.Sprintf("t%02d", i), "v1")
	}
	mustRecordSuccess(t, db, s.ID, verification(s, "j-init", at(0), tools...))

	// Workers 0, 3, 6, ... each own one tool and set its policy; 1, 4, 7,
	// ... re-verify with the same tools; 2, 5, 8, ... read.
	policies := []string{PolicyAllow, PolicyAsk, PolicyDeny}
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for i := range iters {
				switch w % 3 {
				case 0:
					name := tools[w/3].Name
					if _, err := db.SetPolicy(s.ID, name, policies[i%3], fmt.Sprintf("w%d", w)); err != nil {
						t.Errorf("SetPolicy(%q, %q) = %v; want nil", s.ID, name, err)
						return
					}
					writes.Add(1)
				case 1:
					if err := db.RecordSuccess(s.ID, verification(s, fmt.Sprintf("j-%d-%d", w, i), at(1+w*iters+i), tools...)); err != nil {
						t.Errorf("RecordSuccess(%q) = %v; want nil", s.ID, err)
						return
					}
					writes.Add(1)
				case 2:
					sums, err := db.Summaries()
					if err != nil || len(sums) != 1 || sums[0].Discovery.Status != StatusSuccess || sums[0].Discovery.ToolCount != nTools {
						t.Errorf("Summaries() = %+v, %v; want one successful record with %d tools", sums, err, nTools)
						return
					}
					list, err := db.Tools(s.ID)
					if err != nil || len(list) != nTools {
						t.Errorf("Tools(%q) = %d entries, %v; want %d, nil", s.ID, len(list), err, nTools)
						return
					}
					for _, e := range list {
						if e.State != ToolActive || e.Policy.Pin != e.Pin || e.Effective != e.Policy.Policy {
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
	d := mustSummary(t, db, s.ID).Discovery
	if d.Status != StatusSuccess || d.ToolCount != nTools || d.Error != nil {
		t.Errorf("final Discovery = {Status:%s ToolCount:%d Error:%+v}; want {success %d <nil>}", d.Status, d.ToolCount, d.Error, nTools)
	}
	got := mustTools(t, db, s.ID)
	if len(got) != nTools {
		t.Fatalf("len(Tools(%q)) = %d; want %d", s.ID, len(got), nTools)
	}
	for i, tool := range tools {
		e := got[tool.Name]
		// Tools and record are written in one transaction, so the last
		// verification's time is on every tool.
		if !e.FirstSeen.Equal(at(0)) || !e.LastSeen.Equal(d.VerifiedAt) || e.State != ToolActive {
			t.Errorf("final Tools(%q)[%s] = {FirstSeen:%v LastSeen:%v State:%s}; want {%v %v active}", s.ID, tool.Name, e.FirstSeen, e.LastSeen, e.State, at(0), d.VerifiedAt)
		}
		wantPolicy, wantBy := PolicyAsk, PolicySetByDefault
		if w := i * 3; w < workers {
			wantPolicy, wantBy = policies[(iters-1)%3], fmt.Sprintf("w%d", w)
		}
		if e.Policy.Policy != wantPolicy || e.Policy.SetBy != wantBy || e.Policy.Pin != tool.Pin {
			t.Errorf("final Tools(%q)[%s].Policy = %+v; want {%s by %s at pin %.8s}", s.ID, tool.Name, e.Policy, wantPolicy, wantBy, tool.Pin)
		}
	}
}

// TestLaunchHash: the launch a person confirms covers what runs (or what
// is contacted), and nothing a secret rotation or a cosmetic edit changes.
func TestLaunchHash(t *testing.T) {
	base := stdioServer("fs")
	baseHash := base.LaunchHash()
	remote := func(s *Server) { s.Transport, s.URL = TransportHTTP, "https://mcp.example.com/mcp" }
	tests := []struct {
		name       string
		edit       func(s *Server)
		wantChange bool
	}{
		{"command", func(s *Server) { s.Command = "uvx" }, true},
		{"args value", func(s *Server) { s.Args[2] = "/" }, true},
		{"args split differently", func(s *Server) { s.Args = []string{"-y @modelcontextprotocol/server-filesystem", "/tmp"} }, true},
		{"env key added", func(s *Server) { s.Env["LD_PRELOAD"] = "/tmp/x.so" }, true},
		{"env key renamed", func(s *Server) { delete(s.Env, "TOKEN"); s.Env["TOKEN2"] = "secret" }, true},
		{"cwd", func(s *Server) { s.Cwd = "/" }, true},
		{"transport and url", remote, true},

		{"env value rotated", func(s *Server) { s.Env["TOKEN"] = "rotated" }, false},
		{"name", func(s *Server) { s.Name = "Files" }, false},
		{"timeout and memory", func(s *Server) { s.TimeoutMS, s.MemoryMB = 1, 64 }, false},
		{"policy", func(s *Server) { s.DefaultPolicy = PolicyAllow }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := stdioServer("fs")
			tt.edit(&s)
			if changed := s.LaunchHash() != baseHash; changed != tt.wantChange {
				t.Errorf("LaunchHash changed = %v; want %v", changed, tt.wantChange)
			}
		})
	}
	r1, r2 := stdioServer("a"), stdioServer("a")
	remote(&r1)
	remote(&r2)
	r2.Headers = map[string]string{"Authorization": "Bearer x"}
	if r1.LaunchHash() != r2.LaunchHash() {
		t.Error("LaunchHash of a remote server changed with its headers; want only transport and URL")
	}
	r2.URL = "https://evil.example.com/mcp"
	if r1.LaunchHash() == r2.LaunchHash() {
		t.Error("LaunchHash of a remote server did not change with its URL")
	}
}

// TestConfirmLaunch: a new server is unconfirmed (whatever the caller
// passed), confirmation survives edits that keep the launch and is lost by
// edits that change it, and a confirmation of an outdated launch fails.
func TestConfirmLaunch(t *testing.T) {
	db := mustOpen(t)
	s := stdioServer("fs")
	s.LaunchConfirmed = s.LaunchHash() // a caller cannot pre-confirm
	got := mustCreate(t, db, s)
	if got.LaunchConfirmedNow() {
		t.Fatal("a new server's launch is confirmed; want unconfirmed")
	}
	shown := got.LaunchHash()
	if err := db.ConfirmLaunch("fs", shown); err != nil {
		t.Fatalf("ConfirmLaunch = %v; want nil", err)
	}
	if got, _ := db.Server("fs"); !got.LaunchConfirmedNow() {
		t.Fatal("launch not confirmed after ConfirmLaunch")
	}

	edit := got
	edit.Name, edit.Env = "Files", map[string]string{"TOKEN": "rotated", "HOME": "/home/me"}
	edit.LaunchConfirmed = ""
	if err := db.UpdateServer(edit); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Server("fs"); !got.LaunchConfirmedNow() {
		t.Error("renaming and rotating a secret lost the confirmation; want it kept")
	}

	edit.Args = append(edit.Args, "/home")
	if err := db.UpdateServer(edit); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Server("fs"); got.LaunchConfirmedNow() {
		t.Error("a new argument kept the confirmation; want it needed again")
	}
	if err := db.ConfirmLaunch("fs", shown); !errors.Is(err, ErrLaunchChanged) {
		t.Errorf("ConfirmLaunch(outdated hash) = %v; want ErrLaunchChanged", err)
	}
	if err := db.ConfirmLaunch("nope", shown); !errors.Is(err, ErrNotFound) {
		t.Errorf("ConfirmLaunch(unknown server) = %v; want ErrNotFound", err)
	}
}

package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-dev/switchboard/store/storetest"

	"github.com/switchboard-dev/switchboard/store"
)

// Exit codes of the "read" helper (see readEverything); exit 3 is a
// refused Open, as for every helper.
const (
	exitReadOK     = 0
	exitReadFailed = 6
)

// readEverything reads everything the store keeps, through its read
// methods, as the dashboard does, then makes one change. It prints a line
// with what it read and exits 0, or prints the first error and exits
// exitReadFailed. A damaged file that bbolt trips over crashes it.
func readEverything(db *DB) int {
	ctx := context.Background()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return exitReadFailed
	}
	sums, err := db.Summaries(ctx)
	if err != nil {
		return fail("Summaries", err)
	}
	tools := 0
	for _, sum := range sums {
		id := sum.Server.ID
		if _, err := db.Summary(ctx, id); err != nil {
			return fail("Summary "+id, err)
		}
		es, err := db.Tools(ctx, id)
		if err != nil {
			return fail("Tools "+id, err)
		}
		// A byte changed inside a string of a tool's JSON can leave it
		// valid JSON naming another tool or agent name: nothing finds
		// that (bbolt keeps no checksums), and looking that name up is
		// then a "not found", an answer like any other.
		for _, e := range es {
			if _, _, err := db.ToolVersions(ctx, store.ToolRef{ServerID: id, Tool: e.Name}); err != nil && !errors.Is(err, store.ErrToolNotFound) {
				return fail("ToolVersions "+id+" "+e.Name, err)
			}
			if _, _, err := db.ToolByAgentName(ctx, e.AgentName); err != nil && !errors.Is(err, store.ErrAgentNameUnknown) {
				return fail("ToolByAgentName "+e.AgentName, err)
			}
		}
		tools += len(es)
		if _, _, err := db.History(ctx, id, 0); err != nil {
			return fail("History "+id, err)
		}
	}
	if _, err := db.AllTools(ctx); err != nil {
		return fail("AllTools", err)
	}
	if _, err := db.Catalog(ctx, func(*store.Summary, store.ToolEntry) error { return nil }); err != nil {
		return fail("Catalog", err)
	}
	if _, _, err := db.Calls(ctx, 1<<20); err != nil {
		return fail("Calls", err)
	}
	if _, err := db.MCPToken(ctx); err != nil {
		return fail("MCPToken", err)
	}
	s := storetest.StdioServer("after-damage")
	if err := db.CreateServer(ctx, s); err != nil {
		return fail("CreateServer", err)
	}
	if err := db.RecordSuccess(ctx, s.ID, storetest.Verification(s, "j", storetest.At(0), benchTools(3)...)); err != nil {
		return fail("RecordSuccess", err)
	}
	if err := db.Close(); err != nil {
		return fail("Close", err)
	}
	fmt.Printf("read %d servers, %d tools\n", len(sums), tools)
	return exitReadOK
}

// realisticDB makes a store as a person's looks after a while — servers
// with one tool and with many, verified several times (so with history,
// changed and missing tools), failures, policies set and approved, calls
// in the audit — closed cleanly, and returns its path.
func realisticDB(t *testing.T) string {
	ctx := t.Context()
	t.Helper()
	path := filepath.Join(t.TempDir(), "realistic.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 3, 8, 20, 60}
	var calls []store.Call
	for i := range 60 {
		s := storetest.MustCreate(t, db, storetest.StdioServer(fmt.Sprintf("srv-%02d", i)))
		tools := benchTools(sizes[rng.IntN(len(sizes))])
		storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j1", storetest.At(i), tools...))
		if i%3 == 0 && len(tools) > 1 {
			// the first tool changes, the last goes missing
			tools[0] = storetest.MkTool(tools[0].Name, "v2")
			storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j2", storetest.At(100+i), tools[:len(tools)-1]...))
		}
		if i%4 == 0 {
			if err := db.RecordFailure(ctx, s.ID, storetest.Failure(s, "j3", store.StatusTimeout, storetest.At(200+i))); err != nil {
				t.Fatalf("RecordFailure = %v; want nil", err)
			}
		}
		if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: s.ID, Tool: tools[len(tools)/2].Name}, store.PolicyAllow, "me"); err != nil {
			t.Fatalf("SetPolicy = %v; want nil", err)
		}
		calls = append(calls, store.Call{At: storetest.At(300 + i), Session: "s", ServerID: s.ID, Tool: tools[0].Name, AgentName: s.ID + "__" + tools[0].Name, Outcome: "ok"})
	}
	if err := db.AppendCalls(ctx, calls); err != nil {
		t.Fatalf("AppendCalls = %v; want nil", err)
	}
	if _, err := db.RotateMCPToken(ctx); err != nil {
		t.Fatalf("RotateMCPToken = %v; want nil", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	return path
}

// Random damage to a database closed cleanly — a few bytes of a few
// pages, anywhere, 30 seeds — never crashes or hangs the process that
// opens it: each time, either Open refuses the file naming it and saying
// what to do, or it opens and every read (and a change) succeeds. The
// opening process is a child, so a crash is seen, not suffered.
func TestRandomDamageNeverCrashes(t *testing.T) {
	const seeds = 30
	clean := realisticDB(t)
	orig, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	l := fileLayout(t, clean)
	pages := int64(len(orig)) / l.pageSize
	t.Logf("database of %d pages of %d bytes", pages, l.pageSize)
	opened, refused := 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 16))
		data := bytes.Clone(orig)
		var damaged []string
		for range 1 + rng.IntN(3) {
			page := rng.Int64N(pages)
			n := 1 + rng.IntN(32)
			for range n {
				data[page*l.pageSize+rng.Int64N(l.pageSize)] = byte(rng.Uint32())
			}
			damaged = append(damaged, fmt.Sprintf("page %d (%d bytes)", page, n))
		}
		path := filepath.Join(t.TempDir(), fmt.Sprintf("damaged-%02d.db", seed))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := helperCommand(t, "read", path)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out := strings.TrimSpace(stderr.String())
		switch code := cmd.ProcessState.ExitCode(); {
		case code == exitReadOK:
			opened++
		case code == 3 && strings.HasPrefix(out, "store: "+path+" ") && strings.Contains(out, "restore a backup") && !strings.Contains(out, "\n"):
			refused++
		default:
			if len(out) > 1000 {
				out = out[:1000] + "…"
			}
			how := fmt.Sprintf("exit %d", code)
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				how = "killed by " + ws.Signal().String() + " (a hang, stopped by the helper's deadline)"
			}
			t.Errorf("seed %d, damage to %s: opening and reading it: %v, %s:\n%s\nwant it read in full, or refused naming the file and what to do",
				seed, strings.Join(damaged, ", "), err, how, out)
		}
	}
	t.Logf("%d seeds: %d opened and read in full, %d refused", seeds, opened, refused)
}

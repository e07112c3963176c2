package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// damageBucketPages sets the type of the first page of every top-level
// bucket of the closed file at path, but meta and discovery, to 0, which
// no page has, and returns the buckets' names. bbolt checks the type of
// every page it reads through a tree (Page.FastCheck), so the first read
// of any of these buckets makes bbolt itself panic ("assertion failed:
// page N: has unexpected type/flags: 0"), a panic that recover catches.
// Damage that sent bbolt to an address beyond the mapped file would fault
// instead, which is fatal without debug.SetPanicOnFault: it would kill the
// test binary rather than fail the test. Open reads the meta and
// discovery buckets, and the page that lists the buckets, so those are
// left sound, for Open to get past them.
func damageBucketPages(t *testing.T, path string) []string {
	t.Helper()
	roots := map[string]uint64{}
	var pageSize int64
	rawView(t, path, func(tx *bbolt.Tx) error {
		pageSize = int64(tx.DB().Info().PageSize)
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			if !bytes.Equal(name, bucketMeta) && !bytes.Equal(name, bucketDiscovery) {
				roots[string(name)] = uint64(b.Root())
			}
			return nil
		})
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, root := range roots {
		if root == 0 {
			t.Fatalf("bucket %s of %s is inline, in the page that lists the buckets; want it on a page of its own (give it more records)", name, path)
		}
		binary.NativeEndian.PutUint16(data[int64(root)*pageSize+8:], 0) // the page's flags
		names = append(names, name)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// tryCall calls fn, and returns what it returned or, if it panicked, the
// panic's value.
func tryCall(fn func() error) (panicked any, err error) {
	defer func() { panicked = recover() }()
	return nil, fn()
}

// A file damaged on disk and sealed again, so that the seal vouches for
// the damage — a seal forged by an attacker, or a byte flipped and then
// sealed (issue 34 L5) — opens without the full check. Every read and
// change of the store that meets the damage then answers an ErrDamaged
// error naming the file and saying to restore a backup, where bbolt
// panics on it: the process lives on, and what is intact (the MCP token)
// is still served. Close leaves such a file unsealed, so the next Open
// checks it and refuses it.
func TestSealedDamageIsAnError(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	mcpToken := storetest.Fill(t, db)
	sess, ct := padBuckets(t, db)
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}

	damaged := damageBucketPages(t, path)
	t.Logf("damaged the first page of buckets %s", strings.Join(damaged, ", "))
	// The check finds it: only the seal below lets it through.
	if db, err := Open(path, Options{}); !errors.Is(err, store.ErrDamaged) {
		if err == nil {
			db.Close()
		}
		t.Fatalf("Open(%q) of the damaged file with its old seal = %v; want ErrDamaged", path, err)
	}
	if err := writeSeal(path, nil); err != nil {
		t.Fatal(err)
	}
	db = mustOpenPath(t, path, Options{})

	files := storetest.StdioServer("files")
	tool := store.ToolRef{ServerID: "files", Tool: "read"}
	prompt := store.ListedRef{ServerID: "files", Kind: store.KindPrompt, Key: "summarise"}
	_, newSess := store.NewBrowserSession("Chrome", time.Now(), time.Hour)
	_, newCT := store.NewClientToken("Zed", storetest.At(99))
	// Revision and Subscribe read nothing from the file. Backup is not
	// here either: it copies the file's bytes as they are (tx.WriteTo
	// does not walk the tree), damage included; BackupTo checks its copy.
	tests := []struct {
		name string
		call func() error
	}{
		// Reads.
		{"Server", func() error { _, err := db.Server(ctx, "files"); return err }},
		{"Summary", func() error { _, err := db.Summary(ctx, "files"); return err }},
		{"Summaries", func() error { _, err := db.Summaries(ctx); return err }},
		{"Tools", func() error { _, err := db.Tools(ctx, "files"); return err }},
		{"AllTools", func() error { _, err := db.AllTools(ctx); return err }},
		{"Catalog", func() error {
			_, err := db.Catalog(ctx, func(*store.Summary, store.ToolEntry) error { return nil })
			return err
		}},
		{"Offer", func() error {
			_, err := db.Offer(ctx, func(*store.Summary, store.OfferedTool) error { return nil })
			return err
		}},
		{"ToolVersions", func() error { _, _, err := db.ToolVersions(ctx, tool); return err }},
		{"ToolByAgentName", func() error { _, _, err := db.ToolByAgentName(ctx, "files__read"); return err }},
		{"History", func() error { _, _, err := db.History(ctx, "files", 0); return err }},
		{"JobHistory", func() error { _, err := db.JobHistory(ctx, "files", "job-1"); return err }},
		{"Listed", func() error { _, err := db.Listed(ctx, "files"); return err }},
		{"ListedCatalog", func() error {
			_, err := db.ListedCatalog(ctx, func(*store.Summary, store.ListedEntry) error { return nil })
			return err
		}},
		{"Calls", func() error { _, _, err := db.Calls(ctx, 100); return err }},
		{"Grant", func() error { _, _, err := db.Grant(ctx, "remote", "https://auth.example.com"); return err }},
		{"LatestGrant", func() error { _, _, err := db.LatestGrant(ctx, "remote"); return err }},
		{"ClientTokens", func() error { _, err := db.ClientTokens(ctx); return err }},
		{"Profile", func() error { _, err := db.Profile(ctx, "team"); return err }},
		{"Profiles", func() error { _, err := db.Profiles(ctx); return err }},
		{"Session", func() error { _, err := db.Session(ctx, sess.Hash); return err }},
		{"Dump", func() error { _, err := db.Dump(ctx); return err }},
		{"BackupTo", func() error { return db.BackupTo(ctx, filepath.Join(t.TempDir(), "backup.db")) }},
		// Changes, which read first.
		{"CreateServer", func() error { return db.CreateServer(ctx, storetest.StdioServer("new")) }},
		{"UpdateServer", func() error { return db.UpdateServer(ctx, files) }},
		{"DeleteServer", func() error { return db.DeleteServer(ctx, "files") }},
		{"ConfirmLaunch", func() error { return db.ConfirmLaunch(ctx, "files", files.LaunchHash(), "") }},
		{"MarkRunning", func() error { return db.MarkRunning(ctx, "files", "job-4", storetest.At(90)) }},
		{"RecordSuccess", func() error {
			return db.RecordSuccess(ctx, "files", storetest.Verification(files, "job-4", storetest.At(90), storetest.MkTool("read", "v3")))
		}},
		{"RecordFailure", func() error {
			return db.RecordFailure(ctx, "files", storetest.Failure(files, "job-4", store.StatusTimeout, storetest.At(90)))
		}},
		{"AddLateWarnings", func() error { return db.AddLateWarnings(ctx, "files", "job-3", []string{"late"}) }},
		{"SetPolicy", func() error { _, err := db.SetPolicy(ctx, tool, store.PolicyDeny, "person"); return err }},
		{"SetPolicies", func() error {
			_, err := db.SetPolicies(ctx, "files", []store.PolicyChange{{Tool: "read", Policy: store.PolicyDeny}}, "person")
			return err
		}},
		{"ApproveTool", func() error { _, err := db.ApproveTool(ctx, tool, "pin", "person"); return err }},
		{"ApproveChanges", func() error {
			_, err := db.ApproveChanges(ctx, "files", map[string]string{"a.b": "pin"}, "person")
			return err
		}},
		{"ApproveAll", func() error {
			_, _, err := db.ApproveAll(ctx, "files", nil, []store.ListedPin{{Kind: prompt.Kind, Key: prompt.Key, Pin: "pin"}}, "person")
			return err
		}},
		{"SetListedPolicy", func() error { _, err := db.SetListedPolicy(ctx, prompt, store.PolicyAllow, "person"); return err }},
		{"ApproveListed", func() error { _, err := db.ApproveListed(ctx, prompt, "pin", "person"); return err }},
		{"AppendCalls", func() error {
			return db.AppendCalls(ctx, []store.Call{{At: storetest.At(95), Session: "s3", ServerID: "files", Tool: "read", Outcome: "ok"}})
		}},
		{"SaveGrant", func() error {
			return db.SaveGrant(ctx, "remote", store.Grant{Issuer: "https://auth.example.com", SavedAt: storetest.At(95)})
		}},
		{"DeleteGrants", func() error { return db.DeleteGrants(ctx, "remote") }},
		{"AddClientToken", func() error { return db.AddClientToken(ctx, newCT) }},
		{"UpdateClientToken", func() error {
			_, err := db.UpdateClientToken(ctx, ct.ID, func(*store.ClientToken) error { return nil })
			return err
		}},
		{"RevokeClientToken", func() error { return db.RevokeClientToken(ctx, ct.ID) }},
		{"CreateProfile", func() error {
			return db.CreateProfile(ctx, store.Profile{ID: "new", Name: "New", Mode: store.ProfileAll, CreatedAt: storetest.At(95)})
		}},
		{"UpdateProfile", func() error {
			return db.UpdateProfile(ctx, store.Profile{ID: "team", Name: "Team", Mode: store.ProfileAll, UpdatedAt: storetest.At(95)})
		}},
		{"DeleteProfile", func() error { return db.DeleteProfile(ctx, "team") }},
		{"CreateSession", func() error { return db.CreateSession(ctx, newSess) }},
		{"TouchSession", func() error { return db.TouchSession(ctx, sess.Hash, time.Now()) }},
		{"DeleteSession", func() error { return db.DeleteSession(ctx, sess.Hash) }},
		{"DeleteSessions", func() error { _, err := db.DeleteSessions(ctx); return err }},
		{"Load", func() error { return db.Load(ctx, &store.Dump{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			panicked, err := tryCall(tt.call)
			switch {
			case panicked != nil:
				t.Fatalf("%s = panic(%v); want an ErrDamaged error", tt.name, panicked)
			case !errors.Is(err, store.ErrDamaged) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "restore a backup"):
				t.Errorf("%s = %v; want ErrDamaged naming %s and saying to restore a backup", tt.name, err, path)
			}
		})
	}
	// The meta bucket is sound (Open read it): what it holds is served.
	if got, err := db.MCPToken(ctx); got != mcpToken || err != nil {
		t.Errorf("MCPToken() = %q, %v; want %q, nil", got, err, mcpToken)
	}

	// Every transaction that panicked was rolled back: Close, which
	// waits for them, returns; and leaves the file unsealed.
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if sealed(path, nil) {
		t.Errorf("sealed(%q) after a run that found it damaged = true; want false", path)
	}
	if db, err := Open(path, Options{}); !errors.Is(err, store.ErrDamaged) {
		if err == nil {
			db.Close()
		}
		t.Errorf("Open(%q) after a run that found it damaged = %v; want ErrDamaged", path, err)
	}
}

// A panic of a function the store runs inside a transaction — a caller's
// (Catalog's fn, UpdateClientToken's fn) or Options.BeforeCommit — is a
// bug, not damage: it goes on as it was, not as a damaged file. The
// transaction is rolled back and nothing stays locked: the store goes on
// working, and seals the file at Close as ever.
func TestPanicInTransactionIsNotDamage(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	var failCommit atomic.Bool
	boom := errors.New("boom")
	db := mustOpenPath(t, path, Options{BeforeCommit: func([]store.Change) error {
		if failCommit.Load() {
			panic(boom)
		}
		return nil
	}})
	s := storetest.MustCreate(t, db, storetest.StdioServer("files"))
	storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "job-1", storetest.At(1), storetest.MkTool("read", "v1")))
	_, ct := store.NewClientToken("Claude Desktop", storetest.At(2))
	if err := db.AddClientToken(ctx, ct); err != nil {
		t.Fatalf("AddClientToken = %v; want nil", err)
	}

	tests := []struct {
		name string
		call func() error
	}{
		{"Catalog", func() error {
			_, err := db.Catalog(ctx, func(*store.Summary, store.ToolEntry) error { panic(boom) })
			return err
		}},
		{"UpdateClientToken", func() error {
			_, err := db.UpdateClientToken(ctx, ct.ID, func(*store.ClientToken) error { panic(boom) })
			return err
		}},
		{"CreateServer", func() error {
			failCommit.Store(true)
			defer failCommit.Store(false)
			return db.CreateServer(ctx, storetest.StdioServer("new"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if panicked, err := tryCall(tt.call); panicked != boom {
				t.Errorf("%s with a function that panics = %v, panic(%v); want panic(%v)", tt.name, err, panicked, boom)
			}
		})
	}

	if _, err := db.Server(ctx, "new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Server(%q) after its creation panicked = %v; want ErrNotFound", "new", err)
	}
	if err := db.CreateServer(ctx, storetest.StdioServer("after")); err != nil {
		t.Errorf("CreateServer(%q) after the panics = %v; want nil", "after", err)
	}
	if got := db.Revision(); got == "" {
		t.Error(`Revision() after the panics = ""; want a revision`)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	if !sealed(path, nil) {
		t.Errorf("sealed(%q) after a run whose panics were bugs = false; want true", path)
	}
}

// Every transaction of the store goes through DB.view or DB.write, which
// turn damage bbolt trips over into an error: a call of the bbolt
// handle's View, Update, Batch or Begin anywhere else in the package
// fails this test. (The integrity check's child reads its own handle
// unprotected on purpose: its crash is the parent's answer.)
func TestTransactionsCatchDamage(t *testing.T) {
	fset := token.NewFileSet()
	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil || fd.Name.Name == "view" || fd.Name.Name == "write" {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || !slices.Contains([]string{"View", "Update", "Batch", "Begin"}, sel.Sel.Name) {
					return true
				}
				if handle, ok := sel.X.(*ast.SelectorExpr); ok && handle.Sel.Name == "bolt" {
					t.Errorf("%s: %s uses bbolt's %s directly; want db.view or db.write", fset.Position(sel.Pos()), fd.Name.Name, sel.Sel.Name)
				}
				return true
			})
		}
	}
}

// padBuckets adds enough records to db for every bucket to have a page
// of its own (see damageBucketPages).
// It returns the last browser session and client token it added.
func padBuckets(t *testing.T, db *DB) (store.BrowserSession, store.ClientToken) {
	t.Helper()
	ctx := t.Context()
	var sess store.BrowserSession
	var ct store.ClientToken
	for i := range 12 {
		storetest.MustCreate(t, db, storetest.StdioServer(fmt.Sprintf("pad-%02d", i)))
		_, sess = store.NewBrowserSession("Firefox", time.Now(), time.Hour)
		if err := db.CreateSession(ctx, sess); err != nil {
			t.Fatalf("CreateSession = %v; want nil", err)
		}
		_, ct = store.NewClientToken(fmt.Sprintf("client %d", i), storetest.At(80+i))
		if err := db.AddClientToken(ctx, ct); err != nil {
			t.Fatalf("AddClientToken = %v; want nil", err)
		}
		if err := db.CreateProfile(ctx, store.Profile{ID: fmt.Sprintf("pad-%02d", i), Name: "Padding", Mode: store.ProfileAll, CreatedAt: storetest.At(80 + i)}); err != nil {
			t.Fatalf("CreateProfile = %v; want nil", err)
		}
		if err := db.AppendCalls(ctx, []store.Call{{At: storetest.At(80 + i), Session: "s2", ServerID: "files", Tool: "read", AgentName: "files__read", Outcome: "ok"}}); err != nil {
			t.Fatalf("AppendCalls = %v; want nil", err)
		}
		if err := db.CreateUser(ctx, store.User{ID: fmt.Sprintf("u-pad-%02d", i), Email: fmt.Sprintf("pad-%02d@example.com", i), Role: store.RoleViewer, TokenHash: store.HashToken(fmt.Sprintf("sbu_pad_%02d", i)), CreatedAt: storetest.At(80 + i)}); err != nil {
			t.Fatalf("CreateUser = %v; want nil", err)
		}
	}
	return sess, ct
}

package bolt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store/storetest"

	"github.com/switchboard-dev/switchboard/store"
)

// rawUpdate and rawView open the file with plain bbolt, bypassing the
// store, to inspect or tamper with what is on disk.
func rawUpdate(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bbolt.Open(%q) = %v; want nil", path, err)
	}
	defer b.Close()
	if err := b.Update(fn); err != nil {
		t.Fatalf("bolt Update(%q) = %v; want nil", path, err)
	}
}

func rawView(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("bbolt.Open(%q, read-only) = %v; want nil", path, err)
	}
	defer b.Close()
	if err := b.View(fn); err != nil {
		t.Fatalf("bolt View(%q) = %v; want nil", path, err)
	}
}

func rawSchemaVersion(t *testing.T, path string) string {
	t.Helper()
	var v string
	rawView(t, path, func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return errors.New("no meta bucket")
		}
		v = string(meta.Get(keySchemaVersion))
		return nil
	})
	return v
}

func TestOpenCreatesBucketsAndSchemaVersion(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "nested", "dir", "switchboard.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	if db.Path() != path {
		t.Errorf("Path() = %q; want %q", db.Path(), path)
	}
	s := storetest.StdioServer("files")
	if err := db.CreateServer(ctx, s); err != nil {
		t.Fatalf("CreateServer = %v; want nil", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}

	rawView(t, path, func(tx *bbolt.Tx) error {
		for _, name := range []string{"meta", "servers", "discovery", "tools", "policies"} {
			if tx.Bucket([]byte(name)) == nil {
				t.Errorf("bucket %q after Open = missing; want created", name)
			}
		}
		return nil
	})
	if got, want := rawSchemaVersion(t, path), strconv.Itoa(SchemaVersion); got != want {
		t.Errorf("meta schema_version after Open = %q; want %q", got, want)
	}

	// Reopening an existing store works and keeps its data.
	db = mustOpenPath(t, path, Options{})
	if got, err := db.Server(ctx, s.ID); err != nil || got.Command != s.Command {
		t.Errorf("Server(%q) after reopen = %+v, %v; want the stored server", s.ID, got, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	if err := db.CreateServer(ctx, storetest.StdioServer("files")); err != nil {
		t.Fatalf("CreateServer = %v; want nil", err)
	}
	db.Close()

	newer := strconv.Itoa(SchemaVersion + 1)
	rawUpdate(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte(newer))
	})

	db, err = Open(path, Options{})
	if err == nil {
		db.Close()
		t.Fatalf("Open(%q) with schema version %s = nil error; want refusal", path, newer)
	}
	if msg := err.Error(); !strings.Contains(msg, "upgrade") || !strings.Contains(msg, path) || !strings.Contains(msg, newer) {
		t.Errorf("Open(%q) with schema version %s = %q; want a message naming the path and the version and saying to upgrade", path, newer, msg)
	}
	// The refused file is left as it was.
	if got := rawSchemaVersion(t, path); got != newer {
		t.Errorf("meta schema_version after refused Open = %q; want %q (untouched)", got, newer)
	}
	rawView(t, path, func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte("files")) == nil {
			t.Errorf("server files after refused Open = missing; want kept")
		}
		return nil
	})
}

func TestOpenInUseOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db := mustOpenPath(t, path, Options{})

	// An in-process refusal first: it must not release the lock either.
	if other, err := Open(path, Options{Timeout: 20 * time.Millisecond}); !errors.Is(err, store.ErrInUse) {
		if other != nil {
			other.Close()
		}
		t.Fatalf("Open(%q) in process while open = %v; want ErrInUse", path, err)
	}

	var stdout, stderr bytes.Buffer
	cmd := helperCommand(t, "open", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("second process Open(%q) exit = %v (stdout %q, stderr %q); want exit status 3", path, err, stdout.String(), stderr.String())
	}
	// DefaultOpenTimeout, plus starting the process.
	if elapsed > DefaultOpenTimeout+time.Second {
		t.Errorf("second process took %v to give up; want about %v", elapsed, DefaultOpenTimeout)
	}
	if msg := stderr.String(); !strings.Contains(msg, "in use") || !strings.Contains(msg, path) {
		t.Errorf("second process Open(%q) stderr = %q; want an \"in use\" error naming the path", path, msg)
	}

	// Control: once the first process lets go, the second one gets in.
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}
	stdout.Reset()
	stderr.Reset()
	cmd = helperCommand(t, "open", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || strings.TrimSpace(stdout.String()) != "opened" {
		t.Errorf("second process Open(%q) after Close = %v (stdout %q, stderr %q); want success", path, err, stdout.String(), stderr.String())
	}
}

func TestOpenRefusesEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		db, err := Open(path, Options{})
		if err == nil {
			db.Close()
			t.Fatalf("Open(%q) on a zero-length file (attempt %d) = nil error; want refusal", path, attempt)
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "empty") || errors.Is(err, store.ErrInUse) {
			t.Errorf("Open(%q) on a zero-length file = %q; want a message naming the path and saying it is empty", path, msg)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatalf("Stat(%q) = %v; want nil", path, err)
		}
		if fi.Size() != 0 {
			t.Errorf("size of %q after refused Open = %d; want 0 (never re-initialised)", path, fi.Size())
		}
	}
}

func TestOpenRefusesGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	jsonFile, err := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]any{"files": map[string]any{"command": "npx", "args": []string{"-y", "server-filesystem"}}},
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	const invalid = "is not a valid switchboard database"
	tests := []struct {
		name    string
		content []byte
		wantMsg string // besides the path; "" where bbolt's own message comes through
	}{
		{"json config", jsonFile, invalid},
		{"one byte", random(1), invalid},
		{"random 100 B", random(100), invalid},
		// Between 2 KiB and two pages bbolt reports "file size too small".
		{"random 3000 B", random(3000), ""},
		{"random 5000 B", random(5000), ""},
		{"random 8 KiB", random(8192), invalid},
		{"random 64 KiB", random(64 << 10), invalid},
		{"zero pages 32 KiB", make([]byte, 32<<10), invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "switchboard.db")
			if err := os.WriteFile(path, tt.content, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := Open(path, Options{})
			if err == nil {
				db.Close()
				t.Fatalf("Open(%q) on %s = nil error; want refusal", path, tt.name)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, tt.wantMsg) || errors.Is(err, store.ErrInUse) {
				t.Errorf("Open(%q) on %s = %q; want an error naming the path and containing %q", path, tt.name, msg, tt.wantMsg)
			}
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatalf("ReadFile(%q) = %v; want nil", path, rerr)
			}
			if !bytes.Equal(after, tt.content) {
				t.Errorf("contents of %q after refused Open changed (%d bytes, was %d); want untouched", path, len(after), len(tt.content))
			}
		})
	}
}

func TestOpenMarksRunningAsInterrupted(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open(%q) = %v; want nil", path, err)
	}
	servers := map[string]store.Server{}
	for _, id := range []string{"verified-running", "fresh-running", "ok", "failed", "never"} {
		servers[id] = storetest.MustCreate(t, db, storetest.StdioServer(id))
	}
	for _, id := range []string{"verified-running", "ok", "failed"} {
		storetest.MustRecordSuccess(t, db, id, storetest.Verification(servers[id], "job-1", storetest.At(10), storetest.MkTool("read", "v1")))
	}
	if err := db.RecordFailure(ctx, "failed", storetest.Failure(servers["failed"], "job-2", store.StatusFailed, storetest.At(20))); err != nil {
		t.Fatalf("RecordFailure = %v; want nil", err)
	}
	for _, id := range []string{"verified-running", "fresh-running"} {
		if err := db.MarkRunning(ctx, id, "job-3", storetest.At(30)); err != nil {
			t.Fatalf("MarkRunning(%q) = %v; want nil", id, err)
		}
	}
	before, err := db.Summaries(ctx)
	if err != nil {
		t.Fatalf("Summaries() = %v; want nil", err)
	}
	beforeTools, err := db.AllTools(ctx)
	if err != nil {
		t.Fatalf("AllTools() = %v; want nil", err)
	}
	// Close without finishing the running jobs, as a crash would leave it.
	if err := db.Close(); err != nil {
		t.Fatalf("Close() = %v; want nil", err)
	}

	for reopen := 1; reopen <= 2; reopen++ {
		db, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("Open(%q) #%d = %v; want nil", path, reopen, err)
		}
		after, err := db.Summaries(ctx)
		if err != nil {
			t.Fatalf("Summaries() after reopen #%d = %v; want nil", reopen, err)
		}
		afterTools, err := db.AllTools(ctx)
		if err != nil {
			t.Fatalf("AllTools() after reopen #%d = %v; want nil", reopen, err)
		}
		db.Close()

		if len(after) != len(before) {
			t.Fatalf("len(Summaries()) after reopen #%d = %d; want %d", reopen, len(after), len(before))
		}
		for i, got := range after {
			want := before[i]
			id := want.Server.ID
			if strings.HasSuffix(id, "-running") {
				if got.Discovery.Status != store.StatusInterrupted {
					t.Errorf("Summary(%q).Discovery.Status after reopen #%d = %q; want %q", id, reopen, got.Discovery.Status, store.StatusInterrupted)
				}
				if e := got.Discovery.Error; e == nil || e.Message == "" || e.Class == "" {
					t.Errorf("Summary(%q).Discovery.Error after reopen #%d = %+v; want an explanation", id, reopen, e)
				} else {
					want.Discovery.Error = e
				}
				want.Discovery.Status = store.StatusInterrupted
				if wantStale := !want.Discovery.VerifiedAt.IsZero(); got.Discovery.Stale() != wantStale {
					t.Errorf("Summary(%q).Discovery.Stale() after reopen #%d = %v; want %v", id, reopen, got.Discovery.Stale(), wantStale)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Summary(%q) after reopen #%d = %+v; want %+v", id, reopen, got, want)
			}
		}
		if !reflect.DeepEqual(afterTools, beforeTools) {
			t.Errorf("AllTools() after reopen #%d = %+v; want unchanged %+v", reopen, afterTools, beforeTools)
		}
	}
}

// kill -9 while writing loses nothing that was acknowledged: the child
// prints an id only after CreateServer returned nil for it.
func TestKillDuringWritesLosesNoAcknowledgedChange(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	cmd := helperCommand(t, "write", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	const killAfter = 40
	var acked []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		acked = append(acked, sc.Text())
		if len(acked) == killAfter {
			if err := cmd.Process.Kill(); err != nil {
				t.Errorf("kill helper: %v", err)
			}
		}
	}
	err = cmd.Wait()
	if len(acked) < killAfter {
		t.Fatalf("helper acknowledged %d writes before exiting (%v, stderr %q); want >= %d", len(acked), err, stderr.String(), killAfter)
	}
	if cmd.ProcessState.Success() {
		t.Fatalf("helper exited normally; want it killed")
	}

	db := mustOpenPath(t, path, Options{})
	for i, id := range acked {
		if want := fmt.Sprintf("s%05d", i); id != want {
			t.Fatalf("acknowledgement %d = %q; want %q", i, id, want)
		}
		if _, err := db.Server(ctx, id); err != nil {
			t.Errorf("Server(%q) after kill -9 = %v; want the acknowledged server", id, err)
		}
	}
	sums, err := db.Summaries(ctx)
	if err != nil {
		t.Fatalf("Summaries() after kill -9 = %v; want nil", err)
	}
	// At most one commit can have landed without its acknowledgement.
	if n := len(sums); n < len(acked) || n > len(acked)+1 {
		t.Errorf("len(Summaries()) after kill -9 = %d; want %d or %d", n, len(acked), len(acked)+1)
	}
}

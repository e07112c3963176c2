package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/switchboard-dev/switchboard/store"
)

// Integrity checks run in a child process. bbolt reads the file through a
// memory map and trusts what it finds there: a damaged page can make it
// panic on any goroutine (tx.Check walks the file on one of its own), and
// a page beyond the end of a truncated file faults with SIGBUS. Neither
// can be caught reliably in the process that reads the file, but a child
// that crashes is only an error message for its parent.
//
// bbolt keeps no checksums of its pages, so nothing short of reading the
// whole file finds damage that happened while it was closed: Open checks
// every existing file this way before it uses it (see open).
//
// The child is this same program (os.Executable) with checkPathEnv set;
// RunChildCheckIfAsked, called first thing in main, makes it run the check
// and exit with one of the codes below instead of doing its usual work.
const (
	checkPathEnv    = "SWITCHBOARD_STORE_CHECK_CHILD"
	checkTimeoutEnv = "SWITCHBOARD_STORE_CHECK_TIMEOUT"

	checkOK = "store check: ok"
	// checkUnclean is a line the child writes before its result when
	// the file's last run did not end with Close.
	checkUnclean       = "store check: not closed cleanly"
	exitCheckInUse     = 3
	exitCheckDamaged   = 4
	exitCheckInvalid   = 5 // not a bbolt file, or neither header page is sound
	maxReportedProblem = 10
)

// childCheckReady records that this program calls RunChildCheckIfAsked at
// start-up. It is process-wide because it describes the program: without
// the call, re-executing it would run the program itself (a dashboard, or
// a whole test suite) instead of a check.
var childCheckReady atomic.Bool

// RunChildCheckIfAsked must be the first call in main (and in TestMain of
// tests that open stores). In a child started by CheckInChild it checks
// the database, reports to its parent and exits; otherwise it returns at
// once, and allows this program to run checks in a child.
func RunChildCheckIfAsked() {
	path := os.Getenv(checkPathEnv)
	if path == "" {
		childCheckReady.Store(true)
		return
	}
	timeout, err := time.ParseDuration(os.Getenv(checkTimeoutEnv))
	if err != nil {
		timeout = DefaultOpenTimeout
	}
	os.Exit(runCheck(path, timeout))
}

// runCheck is the child's side: it opens path read-only, walks its pages
// (see checkLayout), runs tx.Check, reads every key and value, decoding
// those the store decodes (see readAll), and writes the outcome on
// stdout. A panic or fault on the way crashes the child, and the parent
// reports that.
func runCheck(path string, timeout time.Duration) int {
	bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: timeout})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return exitCheckInUse
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		fmt.Println(err)
		return exitCheckInvalid
	case err != nil:
		fmt.Printf("could not open it: %v\n", err)
		return exitCheckDamaged
	}
	if err := checkLayout(path); err != nil {
		bdb.Close()
		fmt.Printf("found a problem: %v\n", err)
		return exitCheckDamaged
	}
	var problems []string
	total := 0
	err = bdb.View(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil && meta.Get(keyOpen) != nil {
			fmt.Println(checkUnclean)
		}
		// A damaged branch page that points back up the tree makes
		// tx.Check walk in circles, reporting a page referenced twice
		// each time round: stop listening after a few problems.
		for err := range tx.Check() {
			problems = append(problems, err.Error())
			if total++; total == maxReportedProblem {
				break
			}
		}
		if total > 0 {
			return nil
		}
		return readAll(tx)
	})
	switch {
	case err != nil:
		fmt.Printf("could not read it: %v\n", err)
		return exitCheckDamaged
	case total == maxReportedProblem:
		// The check may still be walking the file: exit without closing
		// it under the walk.
		fmt.Printf("found %d problems or more: %s\n", total, strings.Join(problems, "; "))
		return exitCheckDamaged
	case total > 0:
		bdb.Close()
		fmt.Printf("found %d problem(s): %s\n", total, strings.Join(problems, "; "))
		return exitCheckDamaged
	}
	if err := bdb.Close(); err != nil {
		fmt.Printf("could not close it: %v\n", err)
		return exitCheckDamaged
	}
	fmt.Println(checkOK)
	return 0
}

// readAll reads every key and value of the file, and decodes every value
// the store decodes into what it decodes it into, so that damage inside
// values (which tx.Check does not look at: a length pointing out of its
// page, a byte of JSON changed, an inline bucket) is found here rather
// than by a read in the dashboard. The decoding, most of the work, is
// spread over the CPUs; the values stay valid as long as tx.
func readAll(tx *bbolt.Tx) error {
	type value struct {
		where  func() string
		v      []byte
		decode func([]byte) error
	}
	values := make(chan value, 256)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() { // ends when values is closed
			for val := range values {
				if err := val.decode(val.v); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", val.where(), err)
					}
					mu.Unlock()
				}
			}
		})
	}
	var walk func(top, path string, b *bbolt.Bucket, depth int) error
	walk = func(top, path string, b *bbolt.Bucket, depth int) error {
		decode, valuesOnly := valueDecoder(top, depth)
		return b.ForEach(func(k, v []byte) error {
			crc32.ChecksumIEEE(k) // reads the key
			if v != nil {
				crc32.ChecksumIEEE(v) // reads the value, whatever it is
				// A key the walk lists must be found by its key too: a
				// damaged branch page can send a lookup astray while the
				// leaves still list the key.
				if got := b.Get(k); !bytes.Equal(got, v) {
					return fmt.Errorf("%s/%q: listed, but not found by its key", path, k)
				}
				if decode != nil {
					values <- value{where: func() string { return fmt.Sprintf("%s/%q", path, k) }, v: v, decode: decode}
				}
				return nil
			}
			if valuesOnly {
				return fmt.Errorf("%s/%q: a bucket where the store keeps a value", path, k)
			}
			nb := b.Bucket(k)
			if nb == nil {
				return fmt.Errorf("%s/%q: neither a value nor a bucket", path, k)
			}
			return walk(top, fmt.Sprintf("%s/%q", path, k), nb, depth+1)
		})
	}
	err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		return walk(string(name), string(name), b, 0)
	})
	close(values)
	wg.Wait()
	if err != nil {
		return err
	}
	return firstErr
}

// valueDecoder says how the store decodes the values of a bucket depth
// levels below the top-level bucket top: decode is nil for values it
// reads as bytes (or that it never reads), and valuesOnly is set where it
// expects no nested bucket.
func valueDecoder(top string, depth int) (decode func([]byte) error, valuesOnly bool) {
	into := func(newValue func() any) func([]byte) error {
		return func(v []byte) error { return json.Unmarshal(v, newValue()) }
	}
	switch {
	case depth == 0 && top == string(bucketServers):
		return into(func() any { return new(store.Server) }), true
	case depth == 0 && top == string(bucketDiscovery):
		return into(func() any { return new(store.Discovery) }), true
	case depth == 0 && top == string(bucketAudit):
		return into(func() any { return new(store.Call) }), true
	case depth == 1 && (top == string(bucketTools) || top == string(bucketApproved)):
		return into(func() any { return new(store.Tool) }), true
	case depth == 1 && top == string(bucketPolicies):
		return into(func() any { return new(store.PolicySetting) }), true
	case depth == 1 && top == string(bucketHistory):
		return into(func() any { return new(store.HistoryEntry) }), true
	case depth == 1 && top == string(bucketOffers):
		return checkOfferRecord, true
	case depth == 1 && top == string(bucketAgentNames):
		return nil, true
	case depth == 1 && top == string(bucketGrants):
		return into(func() any { return new(store.Grant) }), true
	case depth == 0 && top == string(bucketClients):
		return into(func() any { return new(store.ClientToken) }), true
	case depth == 0 && top == string(bucketSessions):
		return into(func() any { return new(store.BrowserSession) }), true
	case depth == 0 && top == string(bucketDecisions):
		return into(func() any { return new(store.Decision) }), true
	case depth == 0 && top == string(bucketUsers):
		return into(func() any { return new(store.User) }), true
	case depth == 0 && top == string(bucketMCPSessions):
		return into(func() any { return new(store.MCPSession) }), true
	}
	return nil, false
}

// CheckInChild checks the integrity of the database file at path (every
// page, key and value; see runCheck) in a child process, so that a file
// damaged badly enough to crash bbolt cannot crash the caller. It returns
// nil for a sound file, an ErrDamaged error naming the path with what was
// found, or ErrInUse if another process has the file open for writing.
// The program must call RunChildCheckIfAsked at start-up.
func CheckInChild(ctx context.Context, path string) error {
	return checkInChild(ctx, path, DefaultOpenTimeout, "")
}

// checkInChild is CheckInChild with a lock timeout, and why: the reason
// the check was needed, for the error message ("" if there was none but
// the check itself). A check that runs longer than checkDeadline (a file
// so damaged that reading it never ends) is stopped, and the file
// reported damaged.
func checkInChild(ctx context.Context, path string, timeout time.Duration, why string) error {
	if !childCheckReady.Load() {
		return fmt.Errorf("store: cannot check %s: this program does not call bolt.RunChildCheckIfAsked at start-up", path)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("store: check %s: %w", path, err)
	}
	deadline := checkDeadline(path, timeout)
	cctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(cctx, exe)
	cmd.Env = append(os.Environ(), checkPathEnv+"="+path, checkTimeoutEnv+"="+timeout.String())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var report string
	for line := range strings.Lines(stdout.String()) {
		switch line = strings.TrimSpace(line); {
		case line == checkUnclean && why == "":
			why = "its last run did not shut down cleanly"
		case line != checkUnclean && line != "":
			report = line
		}
	}
	switch {
	case err == nil && report == checkOK:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("store: check %s: %w", path, ctx.Err())
	case cctx.Err() != nil:
		return damagedCheck(path, why, fmt.Sprintf("did not finish in %v", deadline))
	case cmd.ProcessState == nil:
		return fmt.Errorf("store: check %s: %w", path, err)
	}
	switch cmd.ProcessState.ExitCode() {
	case 0:
		return fmt.Errorf("store: check %s: the check process ended without a result (%q)", path, report)
	case exitCheckInUse:
		return fmt.Errorf("%w: %s (is another switchboard running?)", store.ErrInUse, path)
	case exitCheckDamaged:
		return damagedCheck(path, why, report)
	case exitCheckInvalid:
		return &damagedError{path: path, problem: fmt.Sprintf("is not a valid switchboard database (%s)", report)}
	}
	return damagedCheck(path, why, "crashed: "+crashSummary(err, stderr.String()))
}

// checkDeadline bounds a check of the file at path: the wait for its
// lock, and a minute plus a second for every 4 MiB, some ten times what
// reading it takes on a slow disk.
func checkDeadline(path string, lockTimeout time.Duration) time.Duration {
	d := lockTimeout + time.Minute
	if fi, err := os.Stat(path); err == nil {
		d += time.Duration(fi.Size()>>22) * time.Second
	}
	return d
}

// crashSummary is the head of a crashed Go program's stderr (the panic
// value or fatal error and the signal, without the goroutine dumps), or
// how it ended if it printed nothing.
func crashSummary(exit error, stderr string) string {
	var head []string
	for line := range strings.Lines(stderr) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "goroutine ") {
			break
		}
		if line != "" {
			head = append(head, line)
		}
	}
	if len(head) == 0 {
		return exit.Error()
	}
	s := strings.Join(head, " ")
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Integrity checks run in a child process. bbolt reads the file through a
// memory map and trusts what it finds there: a damaged page can make it
// panic on any goroutine (tx.Check walks the file on one of its own), and
// a page beyond the end of a truncated file faults with SIGBUS. Neither
// can be caught reliably in the process that reads the file, but a child
// that crashes is only an error message for its parent.
//
// The child is this same program (os.Executable) with checkPathEnv set;
// RunChildCheckIfAsked, called first thing in main, makes it run the check
// and exit with one of the codes below instead of doing its usual work.
const (
	checkPathEnv    = "SWITCHBOARD_STORE_CHECK_CHILD"
	checkTimeoutEnv = "SWITCHBOARD_STORE_CHECK_TIMEOUT"

	checkOK            = "store check: ok"
	exitCheckInUse     = 3
	exitCheckDamaged   = 4
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

// runCheck is the child's side: it opens path read-only, runs tx.Check and
// writes the outcome on stdout. A panic or fault on the way crashes the
// child, and the parent reports that.
func runCheck(path string, timeout time.Duration) int {
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return exitCheckInUse
	case err != nil:
		fmt.Printf("could not open it: %v\n", err)
		return exitCheckDamaged
	}
	defer bdb.Close()
	var problems []string
	total := 0
	err = bdb.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			if total++; total <= maxReportedProblem {
				problems = append(problems, err.Error())
			}
		}
		return nil
	})
	if err != nil {
		fmt.Printf("could not read it: %v\n", err)
		return exitCheckDamaged
	}
	if total > 0 {
		if total > len(problems) {
			problems = append(problems, fmt.Sprintf("and %d more", total-len(problems)))
		}
		fmt.Printf("found %d problem(s): %s\n", total, strings.Join(problems, "; "))
		return exitCheckDamaged
	}
	fmt.Println(checkOK)
	return 0
}

// CheckInChild checks the integrity of the database file at path (bbolt's
// tx.Check over every page) in a child process, so that a file damaged
// badly enough to crash bbolt cannot crash the caller. It returns nil for
// a sound file, an ErrDamaged error naming the path with what was found,
// or ErrInUse if another process has the file open for writing. The
// program must call RunChildCheckIfAsked at start-up.
func CheckInChild(ctx context.Context, path string) error {
	return checkInChild(ctx, path, DefaultOpenTimeout, "")
}

// checkInChild is CheckInChild with a lock timeout, and why: the reason
// the check was needed, for the error message ("" if it was asked for).
func checkInChild(ctx context.Context, path string, timeout time.Duration, why string) error {
	if !childCheckReady.Load() {
		return fmt.Errorf("store: cannot check %s: this program does not call store.RunChildCheckIfAsked at start-up", path)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("store: check %s: %w", path, err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), checkPathEnv+"="+path, checkTimeoutEnv+"="+timeout.String())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	report := strings.TrimSpace(stdout.String())
	switch {
	case err == nil && report == checkOK:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("store: check %s: %w", path, ctx.Err())
	case cmd.ProcessState == nil:
		return fmt.Errorf("store: check %s: %w", path, err)
	}
	switch cmd.ProcessState.ExitCode() {
	case 0:
		return fmt.Errorf("store: check %s: the check process ended without a result (%q)", path, report)
	case exitCheckInUse:
		return fmt.Errorf("%w: %s (is another switchboard running?)", ErrInUse, path)
	case exitCheckDamaged:
		return damagedCheck(path, why, report)
	}
	return damagedCheck(path, why, "crashed: "+crashSummary(err, stderr.String()))
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

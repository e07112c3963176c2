package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/switchboard-dev/switchboard/store"
)

// Helper-process mode: the test binary re-executes itself with these
// variables set to act as a second switchboard process.
const (
	helperModeEnv = "SWITCHBOARD_STORE_TEST_HELPER"
	helperDBEnv   = "SWITCHBOARD_STORE_TEST_DB"
	// helperFileSizeEnv is the file size limit of the "fill" helper.
	helperFileSizeEnv = "SWITCHBOARD_STORE_TEST_FSIZE"
)

func TestMain(m *testing.M) {
	RunChildCheckIfAsked()
	// A program built with -race sleeps 1 s before exiting, by default;
	// the child processes (helpers, checks) need not.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	if os.Getenv(helperModeEnv) != "" {
		// The child runs only TestHelperProcess, which exits by itself;
		// the leak check belongs to the parent.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// TestHelperProcess is not a test: it is the body of the child process
// started by helperCommand.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		return
	}
	os.Exit(runHelper(mode, os.Getenv(helperDBEnv)))
}

func runHelper(mode, path string) int {
	ctx := context.Background()
	if mode == "fill" {
		if err := limitFileSize(os.Getenv(helperFileSizeEnv)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	db, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer db.Close()
	switch mode {
	case "open":
		fmt.Println("opened")
		return 0
	case "write":
		// Create servers until killed, acknowledging each one on stdout
		// only after CreateServer returned nil.
		for i := range 100000 {
			id := fmt.Sprintf("s%05d", i)
			if err := db.CreateServer(ctx, store.Server{ID: id, Name: id, Transport: store.TransportStdio, Command: "true", DefaultPolicy: store.PolicyAsk}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			if _, err := fmt.Fprintln(os.Stdout, id); err != nil {
				return 4
			}
		}
		return 0
	case "read":
		return readEverything(db)
	case "count":
		return count(db)
	case "fill":
		return fill(db)
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
}

// counterID is the server whose TimeoutMS the "count" helper increments.
const counterID = "counter"

// count increments the counter by one UpdateServer per value, from what
// is stored, until killed. It prints "ready N" with the stored value once
// open, then each value after UpdateServer returned nil for it.
func count(db *DB) int {
	ctx := context.Background()
	s, err := db.Server(ctx, counterID)
	if errors.Is(err, store.ErrNotFound) {
		s = store.Server{ID: counterID, Name: counterID, Transport: store.TransportStdio, Command: "true", DefaultPolicy: store.PolicyAsk}
		err = db.CreateServer(ctx, s)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Printf("ready %d\n", s.TimeoutMS)
	for {
		s.TimeoutMS++
		if err := db.UpdateServer(ctx, s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		if _, err := fmt.Println(s.TimeoutMS); err != nil {
			return 4
		}
	}
}

// exitFull is the "fill" helper's exit code once writes failed cleanly.
const exitFull = 5

// fill creates servers with a 4 KiB argument, printing each id after
// CreateServer returned nil, until a write fails under the file size
// limit. It prints that error on stderr, tries a few more writes (they
// may fail too, but must not panic), and exits with exitFull.
func fill(db *DB) int {
	ctx := context.Background()
	arg := strings.Repeat("x", 4096)
	create := func(i int) error {
		id := fmt.Sprintf("f%05d", i)
		err := db.CreateServer(ctx, store.Server{ID: id, Name: id, Transport: store.TransportStdio, Command: "true", Args: []string{arg}, DefaultPolicy: store.PolicyAsk})
		if err == nil {
			fmt.Println(id)
		}
		return err
	}
	i := 0
	for ; i < 100000; i++ {
		if err := create(i); err != nil {
			fmt.Fprintln(os.Stderr, "write failed:", err)
			break
		}
	}
	for j := 1; j <= 3; j++ {
		create(i + j)
	}
	if err := db.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "close:", err)
	}
	return exitFull
}

// helperCommand returns a command that runs this test binary as a helper
// process in mode against the database at path, with env (NAME=value)
// added to its environment. The context only guards against a hung
// child; nothing is timed with it.
func helperCommand(t *testing.T, mode, path string, env ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperDBEnv+"="+path)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

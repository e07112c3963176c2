package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Helper-process mode: the test binary re-executes itself with these
// variables set to act as a second switchboard process.
const (
	helperModeEnv = "SWITCHBOARD_STORE_TEST_HELPER"
	helperDBEnv   = "SWITCHBOARD_STORE_TEST_DB"
)

func TestMain(m *testing.M) {
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
			if err := db.CreateServer(Server{ID: id, Name: id, Transport: TransportStdio, Command: "true", DefaultPolicy: PolicyAsk}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 3
			}
			if _, err := fmt.Fprintln(os.Stdout, id); err != nil {
				return 4
			}
		}
		return 0
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		return 2
	}
}

// helperCommand returns a command that runs this test binary as a helper
// process in mode against the database at path. The context only guards
// against a hung child; nothing is timed with it.
func helperCommand(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperDBEnv+"="+path)
	return cmd
}

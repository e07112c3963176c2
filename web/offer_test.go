package web_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/mcptest"
	"github.com/switchboard-dev/switchboard/store"
)

// The offer tells the truth about a server that cannot run: a routed
// call to a server that cannot start fails at once with what the server
// said, not after the call deadline; once a verification fails for a
// reason that will not pass by itself (here a crash at start), its tools
// are not offered until it verifies again; a failure that may pass (a
// timeout) keeps the last good tools offered, stale.
func TestOfferOfAServerThatCannotRun(t *testing.T) {
	m := newMCPSetup(t, func(c *webConfig) { c.MCP.CallTimeout = time.Minute })
	e := m.e
	c := mcptest.Connect(t, m.base, testMCPToken)
	saved, err := os.ReadFile(m.files["beta"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.files["beta"]); err != nil { // it exits at start now
		t.Fatal(err)
	}

	t.Run("a call fails fast with the server's error", func(t *testing.T) {
		start := time.Now()
		err := mcptest.Refused(c.Call("beta__read", map[string]any{}))
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("the call failed after %v; want at once (the call deadline is a minute)", took)
		}
		if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "tools file: open") {
			t.Fatalf("call of a server that cannot start = %v; want its exit and its own stderr", err)
		}
	})

	t.Run("a lasting failure unlists its tools", func(t *testing.T) {
		if job := e.verify("beta"); job.Status != "failed" {
			t.Fatalf("verification of a server that cannot start = %v; want failed", job)
		}
		waitFor(t, 5*time.Second, "beta's tools unlisted", func() bool { return !slices.Contains(c.Names(t), "beta__read") })
		_, err := c.Call("beta__read", map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "latest verification failed (exited)") || !strings.Contains(err.Error(), "offered again once it verifies") {
			t.Errorf("call after the failed verification = %v; want refused, saying why and until when", err)
		}
		if !slices.Contains(c.Names(t), "alpha__read") {
			t.Errorf("the other server's tools went too: %q", c.Names(t))
		}
		if d := e.discovery("beta"); d.Error == nil || !d.Error.Lasting {
			t.Errorf("the API's discovery = %v; want its error lasting", d)
		}
		if page := e.login().get("/servers/beta").Body.String(); !strings.Contains(page, `data-testid="tools-withheld"`) {
			t.Errorf("the server page does not say its tools are withheld from agents")
		}
	})

	t.Run("verified again, offered again", func(t *testing.T) {
		if err := os.WriteFile(m.files["beta"], saved, 0o600); err != nil {
			t.Fatal(err)
		}
		if job := e.verify("beta"); job.Status != "success" {
			t.Fatalf("verification = %v", job)
		}
		waitFor(t, 5*time.Second, "beta's tools listed", func() bool { return slices.Contains(c.Names(t), "beta__read") })
	})

	t.Run("a passing failure keeps the tools, stale", func(t *testing.T) {
		now := time.Now()
		if err := e.db.RecordFailure(context.Background(), "beta", store.Failure{JobID: "j-timeout", Trigger: store.TriggerManual,
			ConfigHash: serverConfigHash(t, e, "beta"), Status: store.StatusTimeout, StartedAt: now, FinishedAt: now,
			Error: store.VerifyError{Class: "timeout", Message: "no answer before the initialize deadline"}}); err != nil {
			t.Fatal(err)
		}
		if d := e.discovery("beta"); !d.Stale {
			t.Errorf("discovery after a timeout = %v; want its tools kept, stale", d)
		}
		if res, err := c.Call("beta__read", map[string]any{}); err != nil || !strings.HasPrefix(mcptest.Text(res), "read ") {
			t.Errorf("call after a timed-out verification = %q, %v; want it through", mcptest.Text(res), err)
		}
	})
}

// serverConfigHash is the server's configuration hash, as a verification
// records it.
func serverConfigHash(t *testing.T, e *env, id string) string {
	t.Helper()
	srv, err := e.db.Server(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return srv.ConfigHash()
}

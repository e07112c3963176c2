//go:build unix

// The conformance suite runs in a process group of its own, killed when
// the run ends (see internal/conformance), which needs a Unix system.

package discovery

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/internal/conformance"
)

// TestConformanceClient runs the suite's client scenarios of 2026-07-28
// and of 2025-11-25 against the harness in conformance_client_test.go.
// The scenarios a client of approved tools must pass are required; the
// rest are listed, each with its reason, in
// testdata/conformance-client-<revision>.txt, and a listed scenario that
// passes fails the test.
// authScenarios are the auth/* scenarios of the core specification: the
// first 14 are required of 2025-11-25 too.
var authScenarios = []string{"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
	"auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none", "auth/pre-registration", // 2025-11-25 too: the first 14
	"auth/resource-mismatch",
	"auth/offline-access-scope", "auth/offline-access-not-supported", "auth/authorization-server-migration",
	"auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer",
	"auth/iss-unexpected", "auth/iss-normalized", "auth/metadata-issuer-mismatch"}

func TestConformanceClient(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance suite takes a minute")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, rev := range []struct {
		revision string
		required []string
	}{
		{"2026-07-28", append([]string{"tools_call", "request-metadata", "http-standard-headers", "http-custom-headers",
			"http-invalid-tool-headers", "json-schema-ref-no-deref", "json-schema-2020-12-preservation"}, authScenarios...)},
		{"2025-11-25", append([]string{"initialize", "tools_call", "json-schema-2020-12-preservation", "sse-retry"}, authScenarios[:14]...)},
	} {
		t.Run(rev.revision, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rep, err := conformance.Run(ctx, conformance.Options{
				Mode: conformance.Client, Command: self, Requirements: rev.revision,
				ExpectedFailures: "testdata/conformance-client-" + rev.revision + ".txt",
				Required:         rev.required,
				Env:              []string{harnessEnv + "=1"},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep.Summary())
			for _, p := range rep.Problems() {
				t.Error(p)
			}
			if t.Failed() {
				t.Log(rep.Output)
			}
		})
	}
}

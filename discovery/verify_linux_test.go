// The child's environment is read from /proc/<pid>/environ.

package discovery

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestVerifyChildEnvironment(t *testing.T) {
	t.Setenv("SWITCHBOARD_TOKEN", "process-env-token")
	t.Setenv("SOME_OTHER_VAR", "process-env-other")
	fake := map[string]string{
		"SWITCHBOARD_TOKEN":     "fake-token-0123",
		"AWS_SECRET_ACCESS_KEY": "fake-aws-secret",
		"LANG":                  "C.UTF-8",
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  "/home/switchboard",
		"USER":                  "switchboard",
		"LOGNAME":               "switchboard",
		"SHELL":                 "/bin/sh",
		"TERM":                  "dumb",
		// TMPDIR unset: an empty value must not be passed on.
	}
	var asked []string
	getenv := func(k string) string { asked = append(asked, k); return fake[k] }
	envFile := filepath.Join(t.TempDir(), "env")
	target := Target{
		Transport: TransportStdio,
		Command:   "sh",
		// /proc/$$/environ is exactly what Switchboard passed to execve,
		// without anything sh adds for its children.
		Args: []string{"-c", `echo $$ > "$0.pid"; tr '\0' '\n' < /proc/$$/environ > "$0"; exec "$@"`, envFile, fixture, "-tools", "1"},
		Env:  map[string]string{"MY_SERVER_VAR": "server-value", "HOME": "/srv/home"},
	}
	v := NewVerifier(Limits{}, getenv)
	if _, err := v.Verify(context.Background(), target, 0, nil); err != nil {
		t.Fatal(err)
	}
	assertGroupGone(t, readPid(t, envFile+".pid"))
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, val, _ := strings.Cut(kv, "=")
		env[k] = val
	}
	// The run marker is the one variable Switchboard adds: random, so it
	// tells nothing about Switchboard's own environment.
	if m := env[RunMarkerVar]; len(m) != 16 || strings.Trim(m, "0123456789abcdef") != "" {
		t.Errorf("child %s = %q, want 16 hex digits", RunMarkerVar, m)
	}
	allowed := append([]string{"MY_SERVER_VAR", RunMarkerVar}, AllowedEnv...)
	for k := range env {
		if !slices.Contains(allowed, k) {
			t.Errorf("child got %s=%q, which is neither allowed nor the server's", k, env[k])
		}
	}
	want := map[string]string{
		"MY_SERVER_VAR": "server-value",
		"HOME":          "/srv/home", // the server's own wins
		"PATH":          fake["PATH"],
		"USER":          "switchboard",
		"TERM":          "dumb",
	}
	for k, val := range want {
		if env[k] != val {
			t.Errorf("child %s = %q, want %q", k, env[k], val)
		}
	}
	if _, ok := env["TMPDIR"]; ok {
		t.Error("child got an empty TMPDIR")
	}
	for _, k := range asked {
		if !slices.Contains(AllowedEnv, k) {
			t.Errorf("Verifier read %s from its environment", k)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// switchboard version names the version, commit and date stamped in by
// make dist's -ldflags, and the platform.
func TestVersionStamped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "switchboard")
	build := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X main.version=v9.8.7 -X main.commit=abc123 -X main.date=2026-11-24T00:00:00Z", ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("switchboard version: %v\n%s", err, out)
	}
	want := "switchboard v9.8.7 (commit abc123, built 2026-11-24T00:00:00Z, " + runtime.GOOS + "/" + runtime.GOARCH + ", "
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("switchboard version = %q; want it to start with %q", out, want)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"version", "extra"}, func(string) string { return "" }, nil, &stdout, &stderr); err == nil {
		t.Errorf("switchboard version extra = nil error; want a usage error")
	}
}

// The database's default place follows each system's convention.
func TestDefaultDBPath(t *testing.T) {
	env := map[string]string{"HOME": "/home/ann", "XDG_DATA_HOME": "", "LOCALAPPDATA": `C:\Users\ann\AppData\Local`, "USERPROFILE": `C:\Users\ann`}
	getenv := func(k string) string { return env[k] }
	for goos, want := range map[string]string{
		"linux":   filepath.Join("/home/ann", ".local", "share", "switchboard", "switchboard.db"),
		"darwin":  filepath.Join("/home/ann", "Library", "Application Support", "Switchboard", "switchboard.db"),
		"windows": filepath.Join(`C:\Users\ann\AppData\Local`, "Switchboard", "switchboard.db"),
	} {
		if got := defaultDBPath(goos, getenv); got != want {
			t.Errorf("defaultDBPath(%s) = %q; want %q", goos, got, want)
		}
	}
	env["XDG_DATA_HOME"] = "/data"
	if got, want := defaultDBPath("linux", getenv), filepath.Join("/data", "switchboard", "switchboard.db"); got != want {
		t.Errorf("defaultDBPath(linux) with XDG_DATA_HOME = %q; want %q", got, want)
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/internal/service"
)

// fakeServiceSys is a system with an installed binary, whose service
// manager (if manager) records the commands it is given.
type fakeServiceSys struct {
	ran     [][]string
	running bool // what the manager started answers
}

func (f *fakeServiceSys) sys(t *testing.T, goos string, manager bool) serviceSys {
	exe := filepath.Join(t.TempDir(), "bin", "switchboard")
	os.MkdirAll(filepath.Dir(exe), 0o700)
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o700)
	return serviceSys{goos: goos, exe: exe, uid: 501,
		manager: func() bool { return manager },
		run: func(_ context.Context, argv []string) ([]byte, error) {
			f.ran = append(f.ran, argv)
			if slices.Contains(argv, "enable") || slices.Contains(argv, "bootstrap") || slices.Contains(argv, "/Run") {
				f.running = true
			}
			if slices.Contains(argv, "disable") || slices.Contains(argv, "bootout") || slices.Contains(argv, "/End") {
				f.running = false
			}
			return []byte("active\n"), nil
		},
		answers: func(context.Context, string) bool { return f.running },
	}
}

func runServiceArgs(sys serviceSys, home string, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	err := runService(context.Background(), sys, args, env(map[string]string{"HOME": home}), &out, &errb)
	return out.String(), errb.String(), err
}

// Where no systemd runs (this machine, containers, CI) install writes the
// user unit, starts nothing and says how to start it; status and
// uninstall read and remove that file.
func TestServiceInstallWithoutSystemd(t *testing.T) {
	home := t.TempDir()
	f := &fakeServiceSys{}
	sys := f.sys(t, "linux", false)
	out, _, err := runServiceArgs(sys, home, "install", "-addr", "127.0.0.1:7500")
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(home, ".config", "systemd", "user", "switchboard.service")
	data, err := os.ReadFile(unit)
	if err != nil {
		t.Fatalf("no unit written: %v\n%s", err, out)
	}
	if !strings.Contains(string(data), `ExecStart="`+sys.exe+`" "serve" "-addr" "127.0.0.1:7500"`) || !strings.Contains(string(data), "WantedBy=default.target") {
		t.Errorf("the unit:\n%s", data)
	}
	for _, want := range []string{"Wrote " + unit, "systemd did not boot this machine", "systemctl --user enable --now switchboard.service", "run switchboard serve yourself"} {
		if !strings.Contains(out, want) {
			t.Errorf("install says %q; want it to say %q", out, want)
		}
	}
	if len(f.ran) != 0 {
		t.Errorf("ran %q without a service manager", f.ran)
	}
	out, _, err = runServiceArgs(sys, home, "status")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 3 || !strings.Contains(out, "runs "+sys.exe+" serve") || !strings.Contains(out, "http://127.0.0.1:7500") {
		t.Errorf("status = %v:\n%s; want installed, at its -addr, not answering (exit 3)", err, out)
	}
	if out, _, err := runServiceArgs(sys, home, "uninstall"); err != nil || !strings.Contains(out, "Removed "+unit) {
		t.Errorf("uninstall = %v:\n%s", err, out)
	}
	if _, err := os.Stat(unit); !os.IsNotExist(err) {
		t.Errorf("the unit outlived uninstall: %v", err)
	}
	if out, _, err := runServiceArgs(sys, home, "status"); !errors.As(err, &ee) || ee.code != 3 || !strings.Contains(out, "Not installed") {
		t.Errorf("status after uninstall = %v:\n%s", err, out)
	}
}

// With a service manager, install runs the commands that load and start
// the service and waits for the dashboard to answer; uninstall stops it
// first. On each OS, the commands of its own manager.
func TestServiceInstallRunsTheManager(t *testing.T) {
	for goos, want := range map[string]struct{ load, unload []string }{
		"linux":   {[]string{"systemctl --user daemon-reload", "systemctl --user enable --now switchboard.service"}, []string{"systemctl --user disable --now switchboard.service", "systemctl --user daemon-reload"}},
		"darwin":  {[]string{"launchctl bootstrap gui/501 "}, []string{"launchctl bootout gui/501/" + service.Label}},
		"windows": {[]string{"schtasks /Create /TN Switchboard /XML ", "schtasks /Run /TN Switchboard"}, []string{"schtasks /End /TN Switchboard", "schtasks /Delete /TN Switchboard /F"}},
	} {
		t.Run(goos, func(t *testing.T) {
			home := t.TempDir()
			f := &fakeServiceSys{}
			sys := f.sys(t, goos, true)
			out, _, err := runServiceArgs(sys, home, "install")
			if err != nil || !strings.Contains(out, "Started: Switchboard answers at http://127.0.0.1:7420") {
				t.Fatalf("install = %v:\n%s", err, out)
			}
			check := func(what string, want []string) {
				t.Helper()
				var got []string
				for _, argv := range f.ran {
					got = append(got, strings.Join(argv, " "))
				}
				if len(got) != len(want) {
					t.Fatalf("%s ran %q; want %q", what, got, want)
				}
				for i := range want {
					if !strings.HasPrefix(got[i], want[i]) {
						t.Errorf("%s ran %q; want %q", what, got[i], want[i])
					}
				}
				f.ran = nil
			}
			check("install", want.load)
			if out, _, err := runServiceArgs(sys, home, "status"); err != nil || !strings.Contains(out, "Switchboard answers") {
				t.Errorf("status = %v:\n%s", err, out)
			}
			f.ran = nil
			if _, _, err := runServiceArgs(sys, home, "uninstall"); err != nil {
				t.Fatal(err)
			}
			check("uninstall", want.unload)
		})
	}
}

// A temporary build is never installed, and bad use is a usage error.
func TestServiceRefusals(t *testing.T) {
	home := t.TempDir()
	f := &fakeServiceSys{}
	sys := f.sys(t, "linux", true)
	sys.exe = "/tmp/go-build42/b001/exe/switchboard"
	if _, _, err := runServiceArgs(sys, home, "install"); err == nil || !strings.Contains(err.Error(), "go install") {
		t.Errorf("install of a temporary build = %v; want refused, saying how to install", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(home, ".config", "systemd", "user", "*")); len(matches) != 0 {
		t.Errorf("a refused install wrote %q", matches)
	}
	var ee *exitError
	for _, args := range [][]string{{}, {"restart"}, {"status", "-addr", "x"}, {"install", "extra"}} {
		if _, _, err := runServiceArgs(sys, home, args...); !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("service %q = %v; want a usage error", args, err)
		}
	}
}

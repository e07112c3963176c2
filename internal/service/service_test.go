package service

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Each OS's service file, as written, for a binary whose path needs
// quoting: compared with golden files that a person read (and launchd,
// systemd and schtasks would read: the machine here runs none of them).
func TestServiceFilesAreAsGolden(t *testing.T) {
	cases := []struct {
		golden string
		env    Env
		path   string
		load   [][]string
	}{
		{"linux.service", Env{GOOS: "linux", Home: "/home/me", Getenv: getenv(nil), Exe: "/home/me/go/bin/switch board%", Args: []string{"-addr", "127.0.0.1:7500"}},
			"/home/me/.config/systemd/user/switchboard.service",
			[][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", "switchboard.service"}}},
		{"darwin.plist", Env{GOOS: "darwin", Home: "/Users/me", Getenv: getenv(nil), Exe: "/Users/me/go/bin/switchboard", Args: []string{"-db", "/Users/me/a&b.db"}, UID: 501},
			"/Users/me/Library/LaunchAgents/dev.switchboard.switchboard.plist",
			[][]string{{"launchctl", "bootstrap", "gui/501", "/Users/me/Library/LaunchAgents/dev.switchboard.switchboard.plist"}}},
		{"windows.xml", Env{GOOS: "windows", Home: `C:\Users\me`, Getenv: getenv(map[string]string{"LOCALAPPDATA": `C:\Users\me\AppData\Local`, "USERDOMAIN": "DESK", "USERNAME": "me"}),
			Exe: `C:\Program Files\Switchboard\switchboard.exe`, Args: []string{"-addr", "127.0.0.1:7420"}},
			`C:\Users\me\AppData\Local\Switchboard\switchboard-task.xml`,
			[][]string{{"schtasks", "/Create", "/TN", "Switchboard", "/XML", `C:\Users\me\AppData\Local\Switchboard\switchboard-task.xml`, "/F"}, {"schtasks", "/Run", "/TN", "Switchboard"}}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			p, err := For(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if p.Path != filepath.FromSlash(tc.path) && p.Path != tc.path {
				t.Errorf("Path = %s; want %s", p.Path, tc.path)
			}
			if !slices.EqualFunc(p.Load, tc.load, slices.Equal) {
				t.Errorf("Load = %q; want %q", p.Load, tc.load)
			}
			content := p.Content
			if tc.env.GOOS == "windows" { // UTF-16 with a byte order mark, as schtasks reads it
				if content[0] != 0xFF || content[1] != 0xFE {
					t.Fatalf("the task XML has no UTF-16LE byte order mark")
				}
				u := make([]uint16, 0, len(content)/2)
				for i := 2; i+1 < len(content); i += 2 {
					u = append(u, uint16(content[i])|uint16(content[i+1])<<8)
				}
				content = []byte(string(utf16.Decode(u)))
			}
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				os.WriteFile(golden, content, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(content) != string(want) {
				t.Errorf("%s:\n%s\nwant:\n%s", tc.golden, content, want)
			}
		})
	}
}

// The binary an installed service runs is read back from its file, on
// every OS, quoting undone.
func TestInstalledExeReadsTheFileBack(t *testing.T) {
	dir := t.TempDir()
	for _, env := range []Env{
		{GOOS: "linux", Home: dir, Getenv: getenv(nil), Exe: `/opt/my "tools"/switch%board$`, Args: []string{"-addr", "127.0.0.1:7500"}},
		{GOOS: "darwin", Home: dir, Getenv: getenv(nil), Exe: "/Applications/A&B/switchboard", UID: 501, Args: []string{"-db", "/a<b>.db"}},
		{GOOS: "windows", Home: dir, Getenv: getenv(nil), Exe: `C:\Program Files\Switchboard\switchboard.exe`, Args: []string{"-addr", "127.0.0.1:7420"}},
	} {
		p, err := For(env)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.InstalledExe(); got != "" {
			t.Errorf("%s: InstalledExe before install = %q", env.GOOS, got)
		}
		os.MkdirAll(filepath.Dir(p.Path), 0o700)
		if err := os.WriteFile(p.Path, p.Content, 0o600); err != nil {
			t.Fatal(err)
		}
		if got := p.InstalledExe(); got != env.Exe {
			t.Errorf("%s: InstalledExe = %q; want %q", env.GOOS, got, env.Exe)
		}
		if got, want := p.InstalledArgv(), append([]string{env.Exe, "serve"}, env.Args...); !slices.Equal(got, want) {
			t.Errorf("%s: InstalledArgv = %q; want %q", env.GOOS, got, want)
		}
	}
}

// A temporary build (go run, go test) or a relative path is refused.
func TestCheckExe(t *testing.T) {
	for exe, ok := range map[string]bool{
		"/home/me/go/bin/switchboard":                     true,
		"/tmp/go-build123/b001/exe/switchboard":           false,
		"bin/switchboard":                                 false,
		filepath.Join(os.TempDir(), "bin", "switchboard"): true,
	} {
		if err := CheckExe(exe); (err == nil) != ok {
			t.Errorf("CheckExe(%s) = %v; want ok %v", exe, err, ok)
		}
	}
	if err := CheckExe("/tmp/go-build1/x"); err == nil || !strings.Contains(err.Error(), "go install") {
		t.Errorf("the refusal of a temporary build does not say what to do: %v", err)
	}
}

// StableExe prefers the installed service's binary, then this one.
func TestStableExe(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "clone", "bin", "switchboard")
	installed := filepath.Join(dir, "go", "bin", "switchboard")
	for _, f := range []string{self, installed} {
		os.MkdirAll(filepath.Dir(f), 0o700)
		os.WriteFile(f, []byte("#!/bin/sh\n"), 0o700)
	}
	t.Setenv("PATH", "")
	env := Env{GOOS: "linux", Home: dir, Getenv: getenv(nil), Exe: installed}
	if got := StableExe(env, self); got != self {
		t.Errorf("without a service: %s; want %s", got, self)
	}
	p, _ := For(env)
	os.MkdirAll(filepath.Dir(p.Path), 0o700)
	os.WriteFile(p.Path, p.Content, 0o600)
	if got := StableExe(env, self); got != installed {
		t.Errorf("with a service: %s; want the service's %s", got, installed)
	}
	os.Remove(installed)
	if got := StableExe(env, self); got != self {
		t.Errorf("with a service whose binary is gone: %s; want %s", got, self)
	}
}

// A path or flag with a line break would be a line of its own in the
// unit (a directive of the caller's making): refused.
func TestControlCharactersAreRefused(t *testing.T) {
	for _, env := range []Env{
		{GOOS: "linux", Home: "/h", Getenv: getenv(nil), Exe: "/h/bin/switchboard", Args: []string{"-db", "/h/x.db\nExecStartPre=/bin/sh -c evil"}},
		{GOOS: "darwin", Home: "/h", Getenv: getenv(nil), Exe: "/h/bin/switch\rboard"},
	} {
		if _, err := For(env); err == nil {
			t.Errorf("%q %q: no error", env.Exe, env.Args)
		}
	}
}

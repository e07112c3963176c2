// Package service installs Switchboard as a service of the person's own
// that starts at login: a systemd user unit on Linux, a launchd agent on
// macOS, a Task Scheduler task on Windows. It only makes the plan (the
// file to write, the commands that load, start, stop and query it); the
// caller writes and runs it, so the plan of each OS can be checked on any
// OS.
package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf16"
)

// Name is the service's name: the unit's (switchboard.service), the
// task's; Label is the launchd agent's.
const (
	Name  = "switchboard"
	Label = "dev.switchboard.switchboard"
)

// Env is what a plan depends on.
type Env struct {
	GOOS   string
	Home   string
	Getenv func(string) string
	// Exe is the switchboard binary the service runs (absolute).
	Exe string
	// Args are serve's flags the service runs it with (-addr, -db…).
	Args []string
	// UID is the user's id (macOS: the gui/UID domain).
	UID int
}

// Plan is what installing the service writes and runs on one OS.
type Plan struct {
	GOOS string
	// Path is the file that defines the service; Content what is written
	// there (Mode 0644, or 0600 on Windows, where it may not matter).
	Path    string
	Content []byte
	// Logs is where the service's output goes ("" where the OS keeps it:
	// the journal).
	Logs string
	// Load are the commands that load and start it now; Unload those that
	// stop and unload it; Query the one that says whether it runs.
	Load, Unload [][]string
	Query        []string
	// LogsHint says how to read its output (the login link is there).
	LogsHint string
}

// ErrTemporaryBinary refuses to install a binary `go run` or a test
// built in a temporary directory: the service would run a file that is
// soon gone.
var ErrTemporaryBinary = errors.New("this switchboard is a temporary build (go run?): install it first (go install github.com/switchboard-dev/switchboard/cmd/switchboard@latest, or a release binary from make dist) and run that one")

// CheckExe refuses a binary a service cannot run for long: a relative
// path, or a temporary build.
func CheckExe(exe string) error {
	if !filepath.IsAbs(exe) {
		return fmt.Errorf("the binary's path must be absolute, got %q", exe)
	}
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return ErrTemporaryBinary
	}
	return nil
}

// For is the plan for env (see CheckExe for env.Exe: For does not check
// it, so that a plan's Path can be found without one).
func For(env Env) (Plan, error) {
	argv := append([]string{env.Exe, "serve"}, env.Args...)
	for _, a := range argv {
		if strings.ContainsFunc(a, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return Plan{}, fmt.Errorf("%q holds a control character (a line break?): a service file cannot hold it", a)
		}
	}
	switch env.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd":
		dir := env.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			dir = join(env.GOOS, env.Home, ".config")
		}
		unit := "--user"
		return Plan{GOOS: env.GOOS, Path: join(env.GOOS, dir, "systemd", "user", Name+".service"), Content: systemdUnit(argv),
			Load:     [][]string{{"systemctl", unit, "daemon-reload"}, {"systemctl", unit, "enable", "--now", Name + ".service"}},
			Unload:   [][]string{{"systemctl", unit, "disable", "--now", Name + ".service"}},
			Query:    []string{"systemctl", unit, "is-active", Name + ".service"},
			LogsHint: "journalctl --user -u " + Name + " (the login link is there)"}, nil
	case "darwin":
		logs := join(env.GOOS, env.Home, "Library", "Logs", "Switchboard", "switchboard.log")
		plist := join(env.GOOS, env.Home, "Library", "LaunchAgents", Label+".plist")
		domain := fmt.Sprintf("gui/%d", env.UID)
		return Plan{GOOS: env.GOOS, Path: plist, Content: launchdPlist(argv, logs), Logs: logs,
			Load:     [][]string{{"launchctl", "bootstrap", domain, plist}},
			Unload:   [][]string{{"launchctl", "bootout", domain + "/" + Label}},
			Query:    []string{"launchctl", "print", domain + "/" + Label},
			LogsHint: "the log " + logs + " (the login link is there)"}, nil
	case "windows":
		base := env.Getenv("LOCALAPPDATA")
		if base == "" {
			base = join(env.GOOS, env.Home, "AppData", "Local")
		}
		xmlPath := join(env.GOOS, base, "Switchboard", "switchboard-task.xml")
		content, err := taskXML(argv, env.Getenv("USERDOMAIN"), env.Getenv("USERNAME"))
		if err != nil {
			return Plan{}, err
		}
		return Plan{GOOS: env.GOOS, Path: xmlPath, Content: content,
			Load:     [][]string{{"schtasks", "/Create", "/TN", "Switchboard", "/XML", xmlPath, "/F"}, {"schtasks", "/Run", "/TN", "Switchboard"}},
			Unload:   [][]string{{"schtasks", "/End", "/TN", "Switchboard"}, {"schtasks", "/Delete", "/TN", "Switchboard", "/F"}},
			Query:    []string{"schtasks", "/Query", "/TN", "Switchboard", "/FO", "LIST"},
			LogsHint: "no log is kept: switchboard token prints the API token that logs you in"}, nil
	}
	return Plan{}, fmt.Errorf("no service of the person's own on %s: run switchboard serve yourself", env.GOOS)
}

// join joins a path of goos's, whichever OS this is.
func join(goos string, elem ...string) string {
	if goos == "windows" {
		for i := range elem {
			elem[i] = strings.TrimRight(elem[i], `\/`)
		}
		return strings.Join(elem, `\`)
	}
	return path.Join(elem...)
}

// systemdUnit is the user unit that runs argv.
func systemdUnit(argv []string) []byte {
	var b strings.Builder
	b.WriteString(`# Written by switchboard service install; switchboard service uninstall removes it.
[Unit]
Description=Switchboard: the gate for your MCP servers
Documentation=https://github.com/switchboard-dev/switchboard

[Service]
Type=simple
ExecStart=`)
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(systemdQuote(a))
	}
	// serve stops gracefully on SIGINT, as on Ctrl-C. Its cgroup is its
	// own to divide: each server's walls are a cgroup under it (see
	// discovery/sandbox), as in the scope it makes when run by hand.
	b.WriteString(`
Delegate=yes
KillSignal=SIGINT
TimeoutStopSec=30s
Restart=on-failure
RestartSec=5s

[Install]
WantedBy=default.target
`)
	return []byte(b.String())
}

// systemdQuote quotes a word of ExecStart: double quotes, with
// backslashes and quotes escaped, and % (a specifier) doubled.
func systemdQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	s = strings.ReplaceAll(s, `%`, `%%`)
	s = strings.ReplaceAll(s, "$", "$$")
	return `"` + s + `"`
}

// launchdPlist is the launchd agent that runs argv at login and again if
// it fails, its output in logs.
func launchdPlist(argv []string, logs string) []byte {
	esc := func(s string) string {
		var b bytes.Buffer
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	var args strings.Builder
	for _, a := range argv {
		args.WriteString("\t\t<string>" + esc(a) + "</string>\n")
	}
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by switchboard service install; switchboard service uninstall removes it. -->
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + Label + `</string>
	<key>ProgramArguments</key>
	<array>
` + args.String() + `	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>KeepAlive</key>
	<dict>
		<key>SuccessfulExit</key>
		<false/>
	</dict>
	<key>ExitTimeOut</key>
	<integer>30</integer>
	<key>StandardOutPath</key>
	<string>` + esc(logs) + `</string>
	<key>StandardErrorPath</key>
	<string>` + esc(logs) + `</string>
</dict>
</plist>
`)
}

// taskXML is the Task Scheduler task that runs argv when the user logs
// on, with no time limit (the default stops a task after 72 hours), and
// again if it fails; schtasks reads it as UTF-16 with a byte order mark.
func taskXML(argv []string, domain, user string) ([]byte, error) {
	esc := func(s string) string {
		var b bytes.Buffer
		xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	var args []string
	for _, a := range argv[1:] {
		args = append(args, windowsQuote(a))
	}
	account := user
	if domain != "" && user != "" {
		account = domain + `\` + user
	}
	userID := ""
	if account != "" {
		userID = "\n      <UserId>" + esc(account) + "</UserId>"
	}
	text := `<?xml version="1.0" encoding="UTF-16"?>
<!-- Written by switchboard service install; switchboard service uninstall removes it. -->
<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <RegistrationInfo>
    <Description>Switchboard: the gate for your MCP servers</Description>
  </RegistrationInfo>
  <Triggers>
    <LogonTrigger>
      <Enabled>true</Enabled>` + userID + `
    </LogonTrigger>
  </Triggers>
  <Principals>
    <Principal id="Author">` + userID + `
      <LogonType>InteractiveToken</LogonType>
      <RunLevel>LeastPrivilege</RunLevel>
    </Principal>
  </Principals>
  <Settings>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>
    <RestartOnFailure>
      <Interval>PT1M</Interval>
      <Count>3</Count>
    </RestartOnFailure>
    <Hidden>false</Hidden>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command>` + esc(windowsQuote(argv[0])) + `</Command>
      <Arguments>` + esc(strings.Join(args, " ")) + `</Arguments>
    </Exec>
  </Actions>
</Task>
`
	text = strings.ReplaceAll(text, "\n", "\r\n")
	u := utf16.Encode([]rune(text))
	out := make([]byte, 2, 2+2*len(u))
	out[0], out[1] = 0xFF, 0xFE // little-endian byte order mark
	for _, c := range u {
		out = append(out, byte(c), byte(c>>8))
	}
	return out, nil
}

// windowsQuote quotes an argument as Windows programs split their
// command line (CommandLineToArgvW's rules), only if it needs it.
func windowsQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for _, c := range s {
		switch c {
		case '\\':
			slashes++
			continue
		case '"':
			b.WriteString(strings.Repeat(`\`, 2*slashes+1))
		default:
			b.WriteString(strings.Repeat(`\`, slashes))
		}
		slashes = 0
		b.WriteRune(c)
	}
	b.WriteString(strings.Repeat(`\`, 2*slashes))
	b.WriteByte('"')
	return b.String()
}

// execStart finds the words of a unit's ExecStart, as systemdUnit writes
// them.
var (
	execStart  = regexp.MustCompile(`(?m)^ExecStart=(.*)$`)
	quotedWord = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
	escaped    = regexp.MustCompile(`\\(.)`)
	// plistArgs finds the program arguments of a launchd plist.
	plistArgs = regexp.MustCompile(`<key>ProgramArguments</key>\s*<array>((?:\s*<string>[^<]*</string>)*)\s*</array>`)
	xmlString = regexp.MustCompile(`<string>([^<]*)</string>`)
	// taskExec finds a task's command and arguments.
	taskExec = regexp.MustCompile(`<Command>([^<]*)</Command>\s*<Arguments>([^<]*)</Arguments>`)
)

// InstalledArgv is what the installed service runs (read from its file at
// p.Path: the binary, serve and its flags), or nil if none is installed.
func (p Plan) InstalledArgv() []string {
	data, err := os.ReadFile(p.Path)
	if err != nil {
		return nil
	}
	unescape := func(s string) string {
		var out string
		if xml.Unmarshal([]byte("<s>"+s+"</s>"), &out) != nil {
			return ""
		}
		return out
	}
	var argv []string
	switch p.GOOS {
	case "darwin":
		m := plistArgs.FindSubmatch(data)
		if m == nil {
			return nil
		}
		for _, w := range xmlString.FindAllSubmatch(m[1], -1) {
			argv = append(argv, unescape(string(w[1])))
		}
	case "windows":
		m := taskExec.FindStringSubmatch(decodeUTF16(data))
		if m == nil {
			return nil
		}
		argv = append([]string{strings.Trim(unescape(m[1]), `"`)}, strings.Fields(unescape(m[2]))...)
	default:
		m := execStart.FindSubmatch(data)
		if m == nil {
			return nil
		}
		for _, w := range quotedWord.FindAllStringSubmatch(string(m[1]), -1) {
			s := strings.ReplaceAll(w[1], `%%`, `%`)
			s = strings.ReplaceAll(s, `$$`, `$`)
			argv = append(argv, escaped.ReplaceAllString(s, "$1"))
		}
	}
	if len(argv) == 0 {
		return nil
	}
	return argv
}

// InstalledExe is the binary the installed service runs, or "" if none
// is installed.
func (p Plan) InstalledExe() string {
	if argv := p.InstalledArgv(); len(argv) > 0 {
		return argv[0]
	}
	return ""
}

// decodeUTF16 reads UTF-16LE text with a byte order mark ("" without).
func decodeUTF16(data []byte) string {
	if len(data) < 2 || data[0] != 0xFF || data[1] != 0xFE {
		return ""
	}
	u := make([]uint16, 0, len(data)/2)
	for i := 2; i+1 < len(data); i += 2 {
		u = append(u, uint16(data[i])|uint16(data[i+1])<<8)
	}
	return string(utf16.Decode(u))
}

// StableExe is the switchboard binary a client's config should name: the
// one the installed service runs, if there is one and it is there; else
// this one, by the name PATH finds it under if that is the same file (a
// link that outlives upgrades, as package managers make), else by its own
// path.
func StableExe(env Env, self string) string {
	if p, err := For(env); err == nil {
		if exe := p.InstalledExe(); exe != "" {
			if fi, err := os.Stat(exe); err == nil && fi.Mode().IsRegular() {
				return exe
			}
		}
	}
	if onPath, err := exec.LookPath(Name); err == nil {
		if abs, err := filepath.Abs(onPath); err == nil {
			a, errA := os.Stat(abs)
			b, errB := os.Stat(self)
			if errA == nil && errB == nil && os.SameFile(a, b) {
				return abs
			}
		}
	}
	return self
}

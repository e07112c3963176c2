package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/service"
)

const serviceUsage = `usage: switchboard service install [-addr HOST:PORT] [-db PATH]
       switchboard service uninstall
       switchboard service status

install makes Switchboard start at login, as a service of yours (no root):
a systemd user unit on Linux, a launchd agent on macOS, a Task Scheduler
task on Windows. It runs this switchboard binary (an installed one: not a
temporary build of go run) as switchboard serve, with the database in its
usual place unless -db says otherwise, and starts it now. Where no systemd
runs (containers, CI), the unit is written and you are told how to start
it. uninstall stops and removes it; status says whether it is installed,
what it runs and whether the dashboard answers.
`

// serviceSys is what service install, uninstall and status use of the
// system, replaced in tests.
type serviceSys struct {
	goos string
	exe  string // this switchboard, absolute
	uid  int
	// manager says whether the OS's service manager runs here (Linux:
	// systemd booted and systemctl on PATH).
	manager func() bool
	// run runs a command of the service manager.
	run func(ctx context.Context, argv []string) ([]byte, error)
	// answers says whether a dashboard answers at addr.
	answers func(ctx context.Context, addr string) bool
}

// realServiceSys is serviceSys on this machine.
func realServiceSys() (serviceSys, error) {
	exe, err := os.Executable()
	if err != nil {
		return serviceSys{}, fmt.Errorf("where is this switchboard? %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	return serviceSys{goos: runtime.GOOS, exe: exe, uid: os.Getuid(),
		manager: func() bool { return serviceManagerRuns(runtime.GOOS) },
		run: func(ctx context.Context, argv []string) ([]byte, error) {
			return exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		},
		answers: dashboardAnswers,
	}, nil
}

// serviceManagerRuns says whether goos's service manager can be used
// here: systemd must have booted the machine (sd_booted's test) on Linux.
func serviceManagerRuns(goos string) bool {
	switch goos {
	case "darwin":
		_, err := exec.LookPath("launchctl")
		return err == nil
	case "windows":
		_, err := exec.LookPath("schtasks")
		return err == nil
	}
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		return false
	}
	_, err := exec.LookPath("systemctl")
	return err == nil
}

// dashboardAnswers says whether a Switchboard answers /healthz at addr.
func dashboardAnswers(ctx context.Context, addr string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func serviceCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	sys, err := realServiceSys()
	if err != nil {
		return err
	}
	return runService(ctx, sys, args, getenv, stdout, stderr)
}

func runService(ctx context.Context, sys serviceSys, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, serviceUsage)
		return &exitError{code: 2}
	}
	verb, args := args[0], args[1:]
	fs := flag.NewFlagSet("service "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, serviceUsage); fs.PrintDefaults() }
	addr := fs.String("addr", "", "the address the service's dashboard listens on (default 127.0.0.1:"+strconv.Itoa(DefaultPort)+")")
	db := fs.String("db", "", "the service's database (default: the usual place)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &exitError{code: 0}
		}
		return &exitError{code: 2}
	}
	if fs.NArg() > 0 {
		return usageError("service %s takes no arguments, got %q", verb, fs.Args())
	}
	if verb != "install" && (*addr != "" || *db != "") {
		return usageError("service %s: -addr and -db are install's", verb)
	}
	env := service.Env{GOOS: sys.goos, Home: cmpOr(getenv("HOME"), getenv("USERPROFILE")), Getenv: getenv, Exe: sys.exe, UID: sys.uid}
	if env.Home == "" {
		return errors.New("service: no home directory (HOME) to install into")
	}
	if *addr != "" {
		env.Args = append(env.Args, "-addr", *addr)
	}
	if *db != "" {
		abs, err := filepath.Abs(*db)
		if err != nil {
			return err
		}
		env.Args = append(env.Args, "-db", abs)
	}
	plan, err := service.For(env)
	if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	listen := cmpOr(*addr, "127.0.0.1:"+strconv.Itoa(DefaultPort))
	switch verb {
	case "install":
		return serviceInstall(ctx, sys, plan, listen, stdout)
	case "uninstall":
		return serviceUninstall(ctx, sys, plan, stdout, stderr)
	case "status":
		return serviceStatus(ctx, sys, plan, getenv, stdout)
	}
	return usageError("service: install, uninstall or status? (got %q)", verb)
}

func serviceInstall(ctx context.Context, sys serviceSys, plan service.Plan, addr string, stdout io.Writer) error {
	if err := service.CheckExe(sys.exe); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(plan.Path), 0o700); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	if plan.Logs != "" {
		if err := os.MkdirAll(filepath.Dir(plan.Logs), 0o700); err != nil {
			return fmt.Errorf("service install: %w", err)
		}
	}
	if err := os.WriteFile(plan.Path, plan.Content, 0o644); err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	fmt.Fprintf(stdout, "Wrote %s: it runs %s serve at login.\n", plan.Path, sys.exe)
	if !sys.manager() {
		fmt.Fprintf(stdout, "No service manager runs here (%s), so it is not started. Where one runs, this starts it:\n", noManager(sys.goos))
		for _, argv := range plan.Load {
			fmt.Fprintf(stdout, "  %s\n", strings.Join(argv, " "))
		}
		fmt.Fprintf(stdout, "Here, run switchboard serve yourself (it is what the service runs).\n")
		return nil
	}
	for _, argv := range plan.Load {
		if out, err := sys.run(ctx, argv); err != nil {
			return fmt.Errorf("service install: %s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
		}
	}
	// It answers within seconds; a dashboard that does not is in the
	// service's log.
	deadline := time.Now().Add(15 * time.Second)
	for !sys.answers(ctx, addr) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			fmt.Fprintf(stdout, "Started, but nothing answers at http://%s yet: see %s.\n", addr, plan.LogsHint)
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	fmt.Fprintf(stdout, "Started: Switchboard answers at http://%s. Log in with the API token (switchboard token prints it); the login link is in %s.\n", addr, plan.LogsHint)
	return nil
}

// noManager says why no service manager runs on goos.
func noManager(goos string) string {
	switch goos {
	case "darwin":
		return "no launchctl"
	case "windows":
		return "no schtasks"
	}
	return "systemd did not boot this machine, as in containers and CI"
}

func serviceUninstall(ctx context.Context, sys serviceSys, plan service.Plan, stdout, stderr io.Writer) error {
	if _, err := os.Stat(plan.Path); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stdout, "No service is installed (%s is not there): nothing to do.\n", plan.Path)
		return nil
	}
	if sys.manager() {
		for _, argv := range plan.Unload {
			if out, err := sys.run(ctx, argv); err != nil {
				// Not loaded (stopped by hand, or never started): it goes all the same.
				fmt.Fprintf(stderr, "note: %s: %v: %s\n", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
			}
		}
	}
	if err := os.Remove(plan.Path); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	if sys.manager() && sys.goos == "linux" {
		sys.run(ctx, []string{"systemctl", "--user", "daemon-reload"})
	}
	fmt.Fprintf(stdout, "Removed %s: Switchboard no longer starts at login (its database is kept).\n", plan.Path)
	return nil
}

func serviceStatus(ctx context.Context, sys serviceSys, plan service.Plan, getenv func(string) string, stdout io.Writer) error {
	exe := plan.InstalledExe()
	if exe == "" {
		fmt.Fprintf(stdout, "Not installed (no %s). switchboard service install starts Switchboard at login.\n", plan.Path)
		return &exitError{code: 3}
	}
	fmt.Fprintf(stdout, "Installed: %s runs %s serve at login.\n", plan.Path, exe)
	if fi, err := os.Stat(exe); err != nil || !fi.Mode().IsRegular() {
		fmt.Fprintf(stdout, "Its binary is gone (%s): install switchboard again, then switchboard service install.\n", exe)
	}
	state := "not known: " + noManager(sys.goos)
	if sys.manager() {
		out, _ := sys.run(ctx, plan.Query)
		state = strings.TrimSpace(firstLines(string(out), 3))
	}
	fmt.Fprintf(stdout, "Service manager: %s\n", state)
	addr := serviceAddr(plan, getenv)
	if sys.answers(ctx, addr) {
		fmt.Fprintf(stdout, "Switchboard answers at http://%s.\n", addr)
	} else {
		fmt.Fprintf(stdout, "Nothing answers at http://%s: see %s.\n", addr, plan.LogsHint)
		return &exitError{code: 3}
	}
	return nil
}

// serviceAddr is the address the installed service listens on: its
// -addr, else the default.
func serviceAddr(plan service.Plan, getenv func(string) string) string {
	argv := plan.InstalledArgv()
	for i, a := range argv {
		if (a == "-addr" || a == "--addr") && i+1 < len(argv) {
			return argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, "-addr="); ok {
			return v
		}
	}
	return cmpOr(getenv("SWITCHBOARD_ADDR"), "127.0.0.1:"+strconv.Itoa(DefaultPort))
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeChildNeverSeesTheToken runs the dashboard with its API token
// in its environment (as a person would export SWITCHBOARD_TOKEN), has it
// verify a server that records the environment it was started with, and
// checks that neither the token nor anything else of the dashboard's own
// environment reached the server.
func TestServeChildNeverSeesTheToken(t *testing.T) {
	const token = "dashboard-token-6f1c9e0b"
	const other = "dashboard-only-secret-41d2"
	t.Setenv("SWITCHBOARD_TOKEN", token)
	t.Setenv("DASHBOARD_ONLY_SECRET", other)
	vars := map[string]string{
		"SWITCHBOARD_DB":        filepath.Join(t.TempDir(), "sb.db"),
		"SWITCHBOARD_TOKEN":     token,
		"DASHBOARD_ONLY_SECRET": other,
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  os.Getenv("HOME"),
	}
	base, _, stop := startServe(t, vars)
	defer stop()

	call := func(method, path string, body any) map[string]any {
		t.Helper()
		var buf bytes.Buffer
		if body != nil {
			json.NewEncoder(&buf).Encode(body)
		}
		req, _ := http.NewRequest(method, base+path, &buf)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s = %d %v", method, path, resp.StatusCode, out)
		}
		return out
	}

	envFile := filepath.Join(t.TempDir(), "environ")
	call(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": "recorder", "name": "Recorder", "transport": "stdio", "command": "/bin/sh",
		// /proc/$$/environ is exactly what the dashboard passed to execve.
		"args": []string{"-c", `tr '\0' '\n' < /proc/$$/environ > "$0"; exec "$@"`, envFile, fixture, "-tools", "1"},
		"env":  map[string]string{"SERVER_OWN": "server-value"},
		"cwd":  filepath.Dir(envFile), // where its walls let it write
	})
	job := call(http.MethodPost, "/api/v1/servers/recorder/verify", map[string]any{"confirm": true})["job"].(map[string]any)
	deadline := time.Now().Add(20 * time.Second)
	for job["finished_at"] == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		job = call(http.MethodGet, "/api/v1/jobs/"+job["id"].(string), nil)["job"].(map[string]any)
	}
	if job["status"] != "success" {
		t.Fatalf("verify: %v", job)
	}
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	environ := string(data)
	if !strings.Contains(environ, "SERVER_OWN=server-value\n") {
		t.Errorf("the server's own env is missing from %q", environ)
	}
	for _, leak := range []string{token, other, "SWITCHBOARD_TOKEN", "SWITCHBOARD_DB", "DASHBOARD_ONLY_SECRET"} {
		if strings.Contains(environ, leak) {
			t.Errorf("the child's environment holds %q:\n%s", leak, environ)
		}
	}
}

// buildSwitchboard builds the switchboard binary into a directory of the
// test's own.
func buildSwitchboard(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "switchboard")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/switchboard-dev/switchboard/cmd/switchboard").CombinedOutput(); err != nil {
		t.Fatalf("build switchboard: %v\n%s", err, out)
	}
	return bin
}

// ownFixture copies the fixture to a path of the test's own, so that its
// processes, and those they start of themselves, are told from any other
// test's by /proc/<pid>/exe.
func ownFixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "mcp-fixture")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range procsOf(exe) {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	return exe
}

// privateDir returns a new directory closed to other users, for a
// database.
func privateDir(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(dir, 0o700)
	return dir
}

// dashboard is a switchboard serve process of a test.
type dashboard struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	token  string
	stderr string // its log file
}

// startDashboard runs `switchboard serve` from bin on a random port with
// the database db, and waits until it prints its login URL.
func startDashboard(t *testing.T, bin, db string) *dashboard {
	t.Helper()
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	d := &dashboard{t: t, token: "sweep-test-token-3c5e", stderr: stderr.Name()}
	d.cmd = exec.Command(bin, "serve", "-addr", "127.0.0.1:0", "-db", db)
	d.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SWITCHBOARD_TOKEN=" + d.token}
	d.cmd.Stdout, d.cmd.Stderr = stdout, stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := os.ReadFile(stdout.Name())
		if m := openURL.FindStringSubmatch(string(out)); m != nil {
			d.base = m[1]
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("switchboard printed no login URL; stdout %q, log %s", out, d.log())
		}
	}
}

// log returns what the dashboard logged so far.
func (d *dashboard) log() string {
	data, _ := os.ReadFile(d.stderr)
	return string(data)
}

// call makes an API request and decodes the answer.
func (d *dashboard) call(method, path string, body any) map[string]any {
	d.t.Helper()
	var buf bytes.Buffer
	if body != nil {
		json.NewEncoder(&buf).Encode(body)
	}
	req, _ := http.NewRequest(method, d.base+path, &buf)
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode >= 300 {
		d.t.Fatalf("%s %s = %d %v", method, path, resp.StatusCode, out)
	}
	return out
}

// verify adds a stdio server running script with sh ($0 is the fixture)
// and starts its verification, confirmed; it returns the job's id.
func (d *dashboard) verify(id, script, exe string) string {
	d.t.Helper()
	d.call(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": id, "name": id, "transport": "stdio", "command": "/bin/sh", "args": []string{"-c", script, exe},
	})
	job := d.call(http.MethodPost, "/api/v1/servers/"+id+"/verify", map[string]any{"confirm": true})["job"].(map[string]any)
	return job["id"].(string)
}

// job returns the job with the id.
func (d *dashboard) job(id string) map[string]any {
	d.t.Helper()
	return d.call(http.MethodGet, "/api/v1/jobs/"+id, nil)["job"].(map[string]any)
}

// finished waits until the job has finished and returns it.
func (d *dashboard) finished(id string) map[string]any {
	d.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		job := d.job(id)
		if job["finished_at"] != nil {
			return job
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("job %s did not finish: %v", id, job)
		}
	}
}

// procInfo is what the tests read of a process from /proc.
type procInfo struct {
	pid, ppid, pgrp, sid int
	state                string
	start                string // clock ticks after boot
	args                 []string
}

// readProc reads /proc/<pid>; ok is false if it is gone.
func readProc(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return procInfo{}, false
	}
	p := procInfo{pid: pid, state: f[0], start: f[19]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	p.sid, _ = strconv.Atoi(f[3])
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	p.args = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return p, true
}

// procsOf returns the live processes running the program at exe.
func procsOf(exe string) []procInfo {
	entries, _ := os.ReadDir("/proc")
	var out []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/" + e.Name() + "/exe"); err != nil || target != exe {
			continue
		}
		if p, ok := readProc(pid); ok && p.state != "Z" && p.state != "X" {
			out = append(out, p)
		}
	}
	return out
}

// fixtureMode returns the -mode a fixture process runs.
func fixtureMode(p procInfo) string {
	for i, a := range p.args {
		if a == "-mode" && i+1 < len(p.args) {
			return p.args[i+1]
		}
	}
	return ""
}

// waitProcs waits until the live processes of exe, by mode, are as many
// as want says, and returns them.
func waitProcs(t *testing.T, exe string, want map[string]int) []procInfo {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		procs := procsOf(exe)
		got := map[string]int{}
		for _, p := range procs {
			got[fixtureMode(p)]++
		}
		if maps.Equal(got, want) {
			return procs
		}
		if time.Now().After(deadline) {
			t.Fatalf("fixture processes by mode = %v; want %v", got, want)
		}
	}
}

// stillThere reports whether p is alive as the same process (not gone,
// not a zombie, its pid not taken by another).
func stillThere(p procInfo) bool {
	now, ok := readProc(p.pid)
	return ok && now.start == p.start && now.state != "Z" && now.state != "X"
}

// zombieChildren returns the zombie children of pid.
func zombieChildren(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if child, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(child); ok && p.ppid == pid && p.state == "Z" {
				out = append(out, child)
			}
		}
	}
	return out
}

// TestServeKilledMidVerifyLeavesNothingAfterRestart (hostile #44): the
// dashboard is killed with SIGKILL while it verifies a server that has
// started three processes of its own: one in its group, one in its group
// with a cleared environment (no run marker), and one that left the
// group and was orphaned (double fork, setsid). The dashboard dies, and
// with it the server (Pdeathsig); the three live on under init. Started
// again on the same database, the dashboard stops all three before it
// serves, says so in its log, and then verifies the interrupted server
// afresh, unharmed by the sweep.
func TestServeKilledMidVerifyLeavesNothingAfterRestart(t *testing.T) {
	bin, exe := buildSwitchboard(t), ownFixture(t)
	db := filepath.Join(privateDir(t), "sb.db")
	d := startDashboard(t, bin, db)
	job := d.verify("forker", `"$0" -mode sleep & env -i "$0" -mode sleep & "$0" -mode detach 2>/dev/null; exec "$0" -mode hang-init`, exe)
	procs := waitProcs(t, exe, map[string]int{"hang-init": 1, "sleep": 3})
	var server procInfo
	for _, p := range procs {
		if fixtureMode(p) == "hang-init" {
			server = p
		}
	}
	for _, p := range procs {
		// The detached one was orphaned at once: the dashboard, a child
		// subreaper, adopted it.
		if p.pgrp != server.pid && p.ppid != d.cmd.Process.Pid {
			t.Errorf("orphaned pid %d (%v) has parent %d; want the dashboard %d, a child subreaper", p.pid, p.args, p.ppid, d.cmd.Process.Pid)
		}
	}
	if j := d.job(job); j["status"] != "running" {
		t.Fatalf("job = %v; want it running", j)
	}

	d.cmd.Process.Kill()
	d.cmd.Wait()
	var left []procInfo
	for _, p := range procs {
		if fixtureMode(p) == "sleep" {
			left = append(left, p)
			if !stillThere(p) {
				t.Fatalf("pid %d (%v) died with the dashboard; the test is void", p.pid, p.args)
			}
		}
	}

	d = startDashboard(t, bin, db)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var alive []int
		for _, p := range left {
			if stillThere(p) {
				alive = append(alive, p.pid)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart, processes of the killed dashboard's run are still alive: %v\nlog:\n%s", alive, d.log())
		}
	}
	if log := d.log(); !strings.Contains(log, "stopped the processes left by runs an earlier crash cut short") || !strings.Contains(log, "stopped=3") {
		t.Errorf("the log does not say that 3 processes were stopped:\n%s", log)
	}
	// The interrupted server is verified again, in a new run the sweep
	// left alone.
	waitProcs(t, exe, map[string]int{"hang-init": 1, "sleep": 3})
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := d.cmd.Wait(); err != nil {
		t.Errorf("dashboard after SIGTERM: %v\n%s", err, d.log())
	}
	waitProcs(t, exe, map[string]int{})
}

// TestServeReapsAdoptedOrphans: as a child subreaper the dashboard adopts
// what its servers orphan, and reaps it once stopped (no zombie is left),
// while the exit status of every server still reaches its own Wait: a
// server that exits 7 is reported so, each time.
func TestServeReapsAdoptedOrphans(t *testing.T) {
	bin, exe := buildSwitchboard(t), ownFixture(t)
	d := startDashboard(t, bin, filepath.Join(privateDir(t), "sb.db"))
	pid := d.cmd.Process.Pid
	noZombies := func(when string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			z := zombieChildren(pid)
			if len(z) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the dashboard has zombie children %v", when, z)
			}
		}
	}

	job := d.verify("detacher", `"$0" -mode detach 2>/dev/null; exec "$0" -mode hang-init`, exe)
	for _, p := range waitProcs(t, exe, map[string]int{"hang-init": 1, "sleep": 1}) {
		if fixtureMode(p) == "sleep" && p.ppid != pid {
			t.Fatalf("orphaned pid %d has parent %d; want the dashboard %d, a child subreaper", p.pid, p.ppid, pid)
		}
	}
	d.call(http.MethodPost, "/api/v1/jobs/"+job+"/cancel", nil)
	if j := d.finished(job); j["status"] != "cancelled" {
		t.Errorf("job = %v; want cancelled", j)
	}
	waitProcs(t, exe, map[string]int{})
	noZombies("after a cancelled verification")

	d.call(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": "crasher", "name": "crasher", "transport": "stdio", "command": "/bin/sh",
		"args": []string{"-c", `"$0" -mode detach 2>/dev/null; exec "$0" -mode crash -exit-code 7`, exe},
	})
	for i := range 5 {
		id := d.call(http.MethodPost, "/api/v1/servers/crasher/verify", map[string]any{"confirm": true})["job"].(map[string]any)["id"].(string)
		j := d.finished(id)
		e, _ := j["error"].(map[string]any)
		if j["status"] != "failed" || e["class"] != "exited" || !strings.Contains(fmt.Sprint(e["message"]), "exited with code 7") {
			t.Errorf("run %d: job = %v; want failed, exited with code 7", i, j)
		}
	}
	waitProcs(t, exe, map[string]int{})
	noZombies("after servers that crashed")
}

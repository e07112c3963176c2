package discovery

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// This file reads what Linux's /proc says of processes: the scan for a
// server's processes (its group, its escapees, processes carrying a run
// marker), one process's stat, the pid allocator's state (processes
// created, pids in use, the last pid, pid_max), and the boot and pid
// namespace that pids and start times count in.

// scanProcs returns the live processes (not zombies), read from /proc:
// all of them, or with a non-nil from, those whose pid is at least
// from(number of processes). It runs twice per verification, so it reads
// each stat file into one buffer with plain system calls rather than
// allocating per process.
func scanProcs(from func(live int) int) []procStat {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := dir.Readdirnames(-1)
	dir.Close()
	lowest := 0
	if from != nil {
		lowest = from(len(names))
	}
	out := make([]procStat, 0, len(names))
	var buf [1024]byte
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid < lowest {
			continue
		}
		if ps, ok := statOf(pid, "/proc/"+name+"/stat", buf[:]); ok {
			out = append(out, ps)
		}
	}
	return out
}

// newSince returns the lowest pid a process started since the server can
// have, given about how many processes exist: the server's own pid, as
// long as the kernel's pid cursor cannot have come round to lower pids
// since; otherwise 0 (look at every process). Pids are handed out in
// increasing order and wrap at pid_max, skipping pids in use. The cursor
// is past the server's pid, and no more processes were created since
// than it takes to go all the way round (pid_max, less the pids in use
// and the ones below 300 the kernel never reuses, less a margin for the
// processes created before startForks was read), so nothing newer can
// sit below it.
func (p *process) newSince(live int) int {
	pid := p.pgid()
	last, ok1 := lastPid()
	forks, ok2 := forkCount()
	if !ok1 || !ok2 || p.startForks == 0 || last < pid || forks < p.startForks {
		return 0
	}
	if forks-p.startForks+uint64(live)+300+1000 >= uint64(pidMax()) {
		return 0
	}
	return pid
}

// readProcStat reads one process's stat; ok is false if it is gone or a
// zombie.
func readProcStat(pid int) (procStat, bool) {
	var buf [1024]byte
	return statOf(pid, "/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
}

// readStatAny reads one process's stat, zombies included, and its state.
func readStatAny(pid int) (procStat, byte, bool) {
	var buf [1024]byte
	return statAnyOf(pid, "/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
}

// statOf reads and parses the stat file at path, using buf.
func statOf(pid int, path string, buf []byte) (procStat, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	return parseStat(pid, buf[:n])
}

// statAnyOf is statOf, zombies included, and the state letter.
func statAnyOf(pid int, path string, buf []byte) (procStat, byte, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, 0, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, 0, false
	}
	return parseStatAny(pid, buf[:n])
}

// parseStat parses /proc/<pid>/stat; ok is false for a zombie.
func parseStat(pid int, data []byte) (procStat, bool) {
	ps, state, ok := parseStatAny(pid, data)
	if !ok || state == 'Z' || state == 'X' {
		return procStat{}, false
	}
	return ps, true
}

// parseStatAny parses /proc/<pid>/stat, zombies included, and returns
// the state letter too: after the command name, which is in parentheses
// and may contain anything, come state ppid pgrp ... with starttime the
// 20th field.
func parseStatAny(pid int, data []byte) (ps procStat, state byte, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, 0, false
	}
	ps = procStat{pid: pid}
	field := 0
	for rest := data[i+1:]; field < 20; field++ {
		rest = bytes.TrimLeft(rest, " ")
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		f := rest[:end]
		rest = rest[end:]
		switch field {
		case 0:
			if len(f) == 0 {
				return procStat{}, 0, false
			}
			state = f[0]
		case 1:
			ps.ppid, _ = strconv.Atoi(string(f))
		case 2:
			ps.pgrp, _ = strconv.Atoi(string(f))
		case 19:
			if len(f) == 0 {
				return procStat{}, 0, false
			}
			ps.start, _ = strconv.ParseUint(string(bytes.TrimSpace(f)), 10, 64)
		}
	}
	return ps, state, true
}

// zombieChildren returns the pids of the zombie children of pid, read
// from /proc.
func zombieChildren(pid int) []int {
	names, err := procNames()
	if err != nil {
		return nil
	}
	var out []int
	var buf [1024]byte
	for _, name := range names {
		child, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ps, state, ok := statAnyOf(child, "/proc/"+name+"/stat", buf[:]); ok && state == 'Z' && ps.ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// procNames lists /proc.
func procNames() ([]string, error) {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	return dir.Readdirnames(-1)
}

// hasMarker reports whether the environment pid started with holds marker
// (NUL-terminated). Unreadable environments (another user's) do not.
func hasMarker(pid int, marker []byte) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && (bytes.HasPrefix(env, marker) || bytes.Contains(env, append([]byte{0}, marker...)))
}

// carriesMarker reports whether the environment pid started with holds
// RunMarkerVar with one of the values in markers. Unreadable environments
// (another user's) do not.
func carriesMarker(pid int, markers map[string]bool) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := strings.CutPrefix(string(kv), RunMarkerVar+"="); ok && markers[v] {
			return true
		}
	}
	return false
}

// forkCount returns the number of processes created since boot, from the
// "processes" line of /proc/stat.
func forkCount() (uint64, bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	_, rest, ok := bytes.Cut(data, []byte("\nprocesses "))
	if !ok {
		return 0, false
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, err := strconv.ParseUint(string(line), 10, 64)
	return n, err == nil
}

// lastPid returns the pid the kernel handed out last in this pid
// namespace, the last field of /proc/loadavg.
func lastPid() (int, bool) {
	f, ok := loadavg()
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(f[4]))
	return n, err == nil
}

// pidsInUse returns how many pids are in use at most, every thread
// counted (the total of the fourth field of /proc/loadavg).
func pidsInUse() (uint64, bool) {
	f, ok := loadavg()
	if !ok {
		return 0, false
	}
	_, total, ok := bytes.Cut(f[3], []byte("/"))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(total), 10, 64)
	return n, err == nil
}

// loadavg returns the five fields of /proc/loadavg.
func loadavg() ([][]byte, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return nil, false
	}
	f := bytes.Fields(data)
	return f, len(f) == 5
}

// pidMax is the kernel's pid_max (the smallest it can be, when unknown,
// so that the pid space counts as small).
var pidMax = sync.OnceValue(func() int {
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(data)))
	if err != nil {
		return 0
	}
	return n
})

// bootID identifies this boot of the machine: start times and process
// counts are counted from it.
func bootID() string {
	data, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(bytes.TrimSpace(data))
}

// pidNamespace identifies the pid namespace the pids of this process
// are numbers in.
func pidNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return ns
}

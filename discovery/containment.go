package discovery

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-dev/switchboard/discovery/sandbox"
)

// Containment keeps the processes of one database's servers from
// outliving a crash of Switchboard. Every run is written down in a
// directory beside the database before its server starts (its run
// marker, and once it started its process group and start time), and
// crossed off when stop is done; a record still there at the next start
// is a run a crash cut short, and Sweep stops whatever is left of it. On
// Linux, while a Containment is open this process is also a child
// subreaper: the orphaned descendants of its servers become its children,
// not init's, and it reaps them.
type Containment struct {
	dir       string
	boot      string // boot id; start times count from the boot
	pidNS     string // pid namespace; pids are numbers in it
	release   func()
	subreaper error // why this process is no child subreaper, if it is not
}

// Contain opens the run records of the database at dbPath, in the
// directory dbPath+".runs" (made if missing, closed to others), and
// makes this process a child subreaper where the OS has them (see
// Subreaper). Close ends it. Call Sweep before the first server starts.
func Contain(dbPath string) (*Containment, error) {
	dir := dbPath + ".runs"
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("run records: %w", err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("run records: %s is not a directory", dir)
	} else if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("run records: %w", err)
		}
	}
	c := &Containment{dir: dir, boot: bootID(), pidNS: pidNamespace(), release: func() {}}
	if release, err := becomeReaper(); err != nil {
		c.subreaper = fmt.Errorf("cannot become a child subreaper: %w", err)
	} else {
		c.release = release
	}
	return c, nil
}

// Subreaper returns why this process could not become a child subreaper
// (a kernel or a seccomp policy that refuses), or nil if it is one.
// Without it, orphans go to init while Switchboard runs, and only Sweep
// at the next start finds those that outlive their run.
func (c *Containment) Subreaper() error { return c.subreaper }

// Close stops being a child subreaper (once no other Containment is
// open), after reaping the orphans adopted so far. The records stay.
func (c *Containment) Close() error {
	c.release()
	return nil
}

// Swept is what Sweep found of the runs a crash cut short.
type Swept struct {
	// Runs is how many runs were recorded and never crossed off.
	Runs int
	// Killed are the processes of those runs that Sweep stopped; Left
	// those it could not (another user's, or still there after 2 s).
	Killed, Left []int
}

// Sweep stops what is left of the runs recorded and never crossed off,
// and removes their records. What is left of a run: the processes that
// carry its marker, the members of its server's process group (only
// while that group cannot be another's, see groupIsRun), and their
// descendants. It must run before this process starts servers with the
// Containment.
func (c *Containment) Sweep() (Swept, error) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return Swept{}, fmt.Errorf("run records: %w", err)
	}
	var runs []runInfo
	for _, e := range entries {
		if r, ok := readRun(filepath.Join(c.dir, e.Name())); ok {
			runs = append(runs, r)
		}
	}
	var sw Swept
	if len(runs) > 0 {
		sw.Runs = len(runs)
		sw.Killed, sw.Left = sweepRuns(runs, c.boot, c.pidNS)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), runPrefix) {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
	return sw, nil
}

// runPrefix starts the name of every run record.
const runPrefix = "run-"

// runRecord is the record of one run while it runs: "boot ID", "pidns
// NS", "marker VALUE" lines, written before the server starts, and
// "group PGID START FORKS INUSE" once it started. It is not synced: a
// crash of Switchboard leaves it in the page cache, and a crash of the
// machine leaves no process to find.
type runRecord struct {
	f    *os.File // open until the group line is written
	path string
}

// begin writes the record of a run whose marker has value; a nil
// Containment records nothing.
func (c *Containment) begin(value string) (*runRecord, error) {
	if c == nil {
		return nil, nil
	}
	path := filepath.Join(c.dir, runPrefix+value)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("record the run: %w", err)
	}
	if _, err := fmt.Fprintf(f, "boot %s\npidns %s\nmarker %s\n", c.boot, c.pidNS, value); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("record the run: %w", err)
	}
	return &runRecord{f: f, path: path}, nil
}

// started adds the server's process group, its start time and the pid
// clock read before it started (see groupIsRun).
func (r *runRecord) started(pgid int, start, forks, inUse uint64) error {
	if r == nil {
		return nil
	}
	_, err := fmt.Fprintf(r.f, "group %d %d %d %d\n", pgid, start, forks, inUse)
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err != nil {
		return fmt.Errorf("record the run: %w", err)
	}
	return nil
}

// end crosses the run off.
func (r *runRecord) end() {
	if r == nil {
		return
	}
	if r.f != nil {
		r.f.Close()
	}
	os.Remove(r.path)
}

// runInfo is a run record as read back.
type runInfo struct {
	boot, pidNS, marker string
	pgid                int
	start, forks, inUse uint64
}

// readRun reads a run record; ok is false if it is not one.
func readRun(path string) (runInfo, bool) {
	if !strings.HasPrefix(filepath.Base(path), runPrefix) {
		return runInfo{}, false
	}
	f, err := os.Open(path)
	if err != nil {
		return runInfo{}, false
	}
	defer f.Close()
	// Another user's record would have this process kill what it names
	// (issue 34, M4): only this user's are read.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || foreignFile(fi) {
		return runInfo{}, false
	}
	data, _ := io.ReadAll(io.LimitReader(f, 4096))
	var r runInfo
	for line := range strings.Lines(string(data)) {
		key, value, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch key {
		case "boot":
			r.boot = value
		case "pidns":
			r.pidNS = value
		case "marker":
			r.marker = value
		case "group":
			var pgid int
			var start, forks, inUse uint64
			if n, _ := fmt.Sscanf(value, "%d %d %d %d", &pgid, &start, &forks, &inUse); n == 4 {
				r.pgid, r.start, r.forks, r.inUse = pgid, start, forks, inUse
			}
		}
	}
	return r, r.marker != ""
}

// Contained has the Verifier record the runs of its stdio servers with c
// (see Containment). It returns v.
func (v *Verifier) Contained(c *Containment) *Verifier {
	v.runs = c
	return v
}

// Walled tells the Verifier what the walls of its stdio servers must
// know of Switchboard: its database (whose files no server reads) and
// its port (which no server reaches unless its profile lists it). It
// returns v.
func (v *Verifier) Walled(c sandbox.Config) *Verifier {
	v.walls = c
	return v
}

// Machine is what this machine builds walls with (see sandbox.Probe).
func (v *Verifier) Machine() sandbox.Machine {
	if v.walls.Machine != nil {
		return *v.walls.Machine
	}
	return sandbox.Probe(v.walls)
}

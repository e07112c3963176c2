package serverconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
	"github.com/switchboard-dev/switchboard/store"
)

// Connecting a client moves the servers Switchboard fronts behind it: the
// client's entries of those servers (the same command and arguments, or
// the same URL) are taken out of its files in the same write that adds
// Switchboard's entry, so that its agent reaches them only through the
// gate. What was taken out is kept beside the client's own config file
// (PATH.switchboard-moved, readable by its owner only, as the file was
// written) and disconnecting puts it back where it was.

// Managed is the launches of the servers Switchboard has.
type Managed struct {
	byLaunch map[string]string // launch key → server id
}

// ManagedOf is the launches of servers.
func ManagedOf(servers []store.Server) Managed {
	m := Managed{byLaunch: map[string]string{}}
	for _, s := range servers {
		k := launchKey(s.Transport, s.Command, s.Args, s.URL)
		if _, taken := m.byLaunch[k]; !taken && k != "" {
			m.byLaunch[k] = s.ID
		}
	}
	return m
}

// Match is the id of the server Switchboard has that entry s launches.
func (m Managed) Match(s clientconfig.Server) (string, bool) {
	if s.Name == EntryName {
		return "", false
	}
	id, ok := m.byLaunch[launchKey(s.Transport, s.Command, s.Args, s.URL)]
	return id, ok
}

// launchKey says what a server runs: its command line, or its URL (its
// scheme and host as URLs compare, a trailing slash aside).
func launchKey(transport, command string, args []string, rawURL string) string {
	if transport == store.TransportStdio || transport == "" && command != "" {
		if command == "" {
			return ""
		}
		b, _ := json.Marshal(append([]string{command}, args...))
		return "stdio " + string(b)
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return ""
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	return "url " + u.String()
}

// movesFile is what PATH.switchboard-moved holds: the entries connecting
// the client took out of each of its files.
type movesFile struct {
	Client string      `json:"client"`
	Files  []movedFrom `json:"files"`
}

type movedFrom struct {
	Path  string               `json:"path"`
	Moved []clientconfig.Moved `json:"moved"`
}

// MovesPath is where the entries moved out of the client's files are
// kept, beside its own config file at path.
func MovesPath(path string) string { return path + ".switchboard-moved" }

// readMoves reads the moves kept beside path (none if there is no file).
func readMoves(path string) (movesFile, []byte, error) {
	data, err := os.ReadFile(MovesPath(path))
	if errors.Is(err, fs.ErrNotExist) {
		return movesFile{}, nil, nil
	}
	if err != nil {
		return movesFile{}, nil, err
	}
	var m movesFile
	if err := json.Unmarshal(data, &m); err != nil {
		return movesFile{}, nil, fmt.Errorf("%s: %w (the entries it keeps are in the backups beside the file)", MovesPath(path), err)
	}
	return m, data, nil
}

// Connection is what connecting or disconnecting a client changes: its
// own config file first, then the project files it moves entries out of
// (or back into), and the record of moved entries beside its own file.
type Connection struct {
	Client Client
	Files  []ConfigChange
	// Old is Switchboard's entry as it was in the client's own file (nil
	// if there was none).
	Old *clientconfig.Server

	// The record of moved entries: where it is, what it held, and what
	// it holds once the first n files are written (see record): the
	// entries of files this change does not touch (other), and of each
	// file, those it holds if the file is written, or if not.
	movesPath        string
	movesBefore      []byte // nil: no record
	other            movesFile
	ifWritten, ifNot [][]clientconfig.Moved
	// recordFirst says the record is written before the files (connect:
	// nothing taken out is ever only in a backup), else after them
	// (disconnect: nothing is forgotten before it is back in its file).
	recordFirst bool
}

// record is the record's text once the first n files are written (nil
// for none).
func (c Connection) record(n int) []byte {
	m := movesFile{Client: c.Client.Key, Files: slices.Clone(c.other.Files)}
	for i := range c.Files {
		if i >= len(c.ifNot) {
			break // a plan that failed has no record to write
		}
		moved := c.ifNot[i]
		if i < n {
			moved = c.ifWritten[i]
		}
		if len(moved) > 0 {
			m = m.add(c.Files[i].Path, moved)
		}
	}
	if len(m.Files) == 0 {
		return nil
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	return append(data, '\n')
}

// putRecord writes the record's text (removes it for nil) unless it is
// so already.
func (c Connection) putRecord(data []byte) error {
	cur, err := os.ReadFile(c.movesPath)
	switch {
	case err == nil && bytes.Equal(cur, data):
		return nil
	case data == nil && errors.Is(err, fs.ErrNotExist):
		return nil
	case data == nil:
		return os.Remove(c.movesPath)
	}
	return writeFileAtomic(c.movesPath, data, 0o600)
}

// WriteError says which file of a Connection could not be written: the
// files before it (Done of them) were.
type WriteError struct {
	Done int
	Path string
	Err  error
}

func (e *WriteError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// MainWritten reports whether the client's own file was written, by what
// Write returned.
func MainWritten(err error) bool {
	var we *WriteError
	return err == nil || errors.As(err, &we) && we.Done > 0
}

// Main is the change of the client's own config file.
func (c Connection) Main() ConfigChange { return c.Files[0] }

// Changed reports whether anything would change.
func (c Connection) Changed() bool {
	for _, f := range c.Files {
		if f.Changed() {
			return true
		}
	}
	return false
}

// MovedEntry is an entry moved out of a client's file (or put back).
type MovedEntry struct {
	clientconfig.Moved
	File string
	// Where names the project it belongs to: a Claude Code project, or
	// the folder of a project file; "" for the client's own servers.
	Where string
}

// entries lists what which says of each file, with where it is.
func (c Connection) entries(which func(ConfigChange) []clientconfig.Moved) []MovedEntry {
	var out []MovedEntry
	for i, f := range c.Files {
		for _, m := range which(f) {
			e := MovedEntry{Moved: m, File: f.Path, Where: m.Project}
			if i > 0 && e.Where == "" {
				e.Where = filepath.Dir(filepath.Dir(f.Path)) // <folder>/.cursor/mcp.json
			}
			out = append(out, e)
		}
	}
	return out
}

// Moved lists the entries connecting takes out of the files.
func (c Connection) Moved() []MovedEntry {
	return c.entries(func(f ConfigChange) []clientconfig.Moved { return f.Moved })
}

// Restored lists the entries disconnecting puts back.
func (c Connection) Restored() []MovedEntry {
	return c.entries(func(f ConfigChange) []clientconfig.Moved { return f.Restored })
}

// Kept lists the moved entries disconnecting cannot put back (an entry
// of the same name is in their place now): they stay in the record beside
// the client's file.
func (c Connection) Kept() []MovedEntry {
	return c.entries(func(f ConfigChange) []clientconfig.Moved { return f.Kept })
}

// MovesPath is where the moved entries are kept.
func (c Connection) MovesPath() string { return c.movesPath }

// Diff is the unified diff of every file that changes.
func (c Connection) Diff() string {
	var b strings.Builder
	for _, f := range c.Files {
		if f.Changed() {
			b.WriteString(f.Diff)
		}
	}
	return b.String()
}

// PageDiff is the change as a page shows it (see ConfigChange.PageDiff),
// each file under its path.
func (c Connection) PageDiff() string {
	var b strings.Builder
	for i, f := range c.Files {
		if !f.Changed() {
			continue
		}
		if i > 0 || len(c.Files) > 1 {
			fmt.Fprintf(&b, "# %s\n", f.Path)
		}
		b.WriteString(f.PageDiff())
	}
	return b.String()
}

// Fingerprint changes when any of the files (or the record) does: a page
// posts it back so that what is written is what was shown.
func (c Connection) Fingerprint() string {
	h := sha256.New()
	for _, f := range c.Files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Path, len(f.Before))
		h.Write(f.Before)
	}
	h.Write(c.movesBefore)
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// Write applies the change: each file as ConfigChange.Write writes it,
// and the record of moved entries (before the files when connecting,
// after them when disconnecting). It returns the backups made. If a file
// cannot be written, the error is a *WriteError: the files before it are
// written, and the record says where every moved entry is then.
func (c Connection) Write(now time.Time) (backups []string, err error) {
	if c.movesPath != "" {
		cur, err := os.ReadFile(c.movesPath)
		if err == nil && !bytes.Equal(cur, c.movesBefore) || err != nil && c.movesBefore != nil {
			return nil, fmt.Errorf("%s changed since the diff was shown; look again", c.movesPath)
		}
		if c.recordFirst {
			if err := c.putRecord(c.record(len(c.Files))); err != nil {
				return nil, fmt.Errorf("keep the moved entries: %w", err)
			}
		}
	}
	for i, f := range c.Files {
		b, err := f.Write(now)
		if b != "" {
			backups = append(backups, b)
		}
		if err != nil {
			if c.movesPath != "" {
				if rerr := c.putRecord(c.record(i)); rerr != nil {
					err = fmt.Errorf("%w (and the record of moved entries %s could not be written: %v; the backups hold every file as it was)", err, c.movesPath, rerr)
				}
			}
			return backups, &WriteError{Done: i, Path: f.Path, Err: err}
		}
	}
	if c.movesPath != "" && !c.recordFirst {
		if err := c.putRecord(c.record(len(c.Files))); err != nil {
			return backups, fmt.Errorf("update the record of moved entries %s: %w", c.movesPath, err)
		}
	}
	return backups, nil
}

// writeFileAtomic replaces path with data (a temporary file renamed over
// it) with mode.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ConnectOptions says what connecting moves: the entries of the servers
// in Managed, in the client's own file and in Projects (more files of the
// client's format, for the entries of one project each; see
// ProjectFiles).
type ConnectOptions struct {
	Managed  Managed
	Projects []string
}

// PlanConnect is the change that sets entry as Switchboard's entry in the
// client's config at path (a new file if there is none) and moves the
// entries of the servers Switchboard has out of it and out of the
// project files.
func PlanConnect(c Client, path string, entry clientconfig.Server, o ConnectOptions) (Connection, error) {
	p, err := readConfig(c, path)
	if err != nil {
		return Connection{Client: c, Files: []ConfigChange{p}}, err
	}
	conn := Connection{Client: c, movesPath: MovesPath(p.Path)}
	moves, movesData, err := readMoves(p.Path)
	if err != nil {
		return Connection{Client: c, Files: []ConfigChange{p}}, err
	}
	conn.movesBefore = movesData
	take := func(_ string, s clientconfig.Server) bool { _, ok := o.Managed.Match(s); return ok }
	text := p.Before
	if p.Exists {
		if _, old, ok, err := clientconfig.RemoveEntry(c.Format, text, EntryName); err == nil && ok {
			conn.Old = &old
		}
		if text, p.Moved, err = clientconfig.TakeEntries(c.Format, text, take); err != nil {
			return Connection{Client: c, Files: []ConfigChange{p}}, fmt.Errorf("%s: %w", p.Path, err)
		}
	}
	if p.After, err = clientconfig.SetEntry(c.Format, text, EntryName, entry); err != nil {
		return Connection{Client: c, Files: []ConfigChange{p}}, fmt.Errorf("%s: %w", p.Path, err)
	}
	p.Diff = diff(p.Path, p.Before, p.After)
	conn.Files = append(conn.Files, p)
	for _, proj := range o.Projects {
		q, err := readConfig(c, proj)
		if err != nil || !q.Exists || slices.ContainsFunc(conn.Files, func(f ConfigChange) bool { return f.Path == q.Path }) {
			continue // a project file that cannot be read is left alone; one reached twice (a link) is one
		}
		q.After, q.Moved, err = clientconfig.TakeEntries(c.Format, q.Before, take)
		if err != nil {
			continue
		}
		if len(q.Moved) > 0 {
			q.Diff = diff(q.Path, q.Before, q.After)
			conn.Files = append(conn.Files, q)
		}
	}
	conn.recordFirst = true
	for _, mf := range moves.Files {
		if !slices.ContainsFunc(conn.Files, func(f ConfigChange) bool { return f.Path == mf.Path }) {
			conn.other = conn.other.add(mf.Path, mf.Moved)
		}
	}
	for _, f := range conn.Files {
		var before []clientconfig.Moved
		for _, mf := range moves.Files {
			if mf.Path == f.Path {
				before = append(before, mf.Moved...)
			}
		}
		conn.ifNot = append(conn.ifNot, before)
		conn.ifWritten = append(conn.ifWritten, append(slices.Clone(before), f.Moved...))
	}
	return conn, nil
}

// add records entries moved out of path.
func (m movesFile) add(path string, moved []clientconfig.Moved) movesFile {
	i := slices.IndexFunc(m.Files, func(f movedFrom) bool { return f.Path == path })
	if i < 0 {
		m.Files = append(m.Files, movedFrom{Path: path})
		i = len(m.Files) - 1
	}
	m.Files[i].Moved = append(m.Files[i].Moved, moved...)
	return m
}

// PlanDisconnect is the change that removes Switchboard's entry from the
// client's config at path and puts back the entries connecting moved out
// of it and its project files. An entry whose place is taken now stays
// in the record (Kept).
func PlanDisconnect(c Client, path string) (Connection, error) {
	p, err := readConfig(c, path)
	conn := Connection{Client: c, Files: []ConfigChange{p}, movesPath: MovesPath(p.Path)}
	if err != nil {
		return conn, err
	}
	moves, movesData, err := readMoves(p.Path)
	if err != nil {
		return conn, err
	}
	conn.movesBefore = movesData
	p.After = p.Before
	if p.Exists {
		out, old, ok, err := clientconfig.RemoveEntry(c.Format, p.Before, EntryName)
		if err != nil {
			return conn, fmt.Errorf("%s: %w", p.Path, err)
		}
		p.After = out
		if ok {
			conn.Old = &old
		}
	}
	conn.Files = nil
	restore := func(f *ConfigChange, moved []clientconfig.Moved) error {
		if len(moved) == 0 {
			return nil
		}
		out, skipped, err := clientconfig.PutBack(c.Format, f.After, moved)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		f.After = out
		for _, m := range moved {
			if !slices.ContainsFunc(skipped, func(s clientconfig.Moved) bool { return s.Name == m.Name && s.Project == m.Project }) {
				f.Restored = append(f.Restored, m)
			}
		}
		f.Kept = skipped
		return nil
	}
	var mainMoves []clientconfig.Moved
	for _, mf := range moves.Files {
		if mf.Path == p.Path {
			mainMoves = append(mainMoves, mf.Moved...)
		}
	}
	if err := restore(&p, mainMoves); err != nil {
		return conn, err
	}
	p.Diff = diff(p.Path, p.Before, p.After)
	conn.Files = append(conn.Files, p)
	conn.ifNot, conn.ifWritten = append(conn.ifNot, mainMoves), append(conn.ifWritten, p.Kept)
	for _, mf := range moves.Files {
		if mf.Path == p.Path {
			continue
		}
		if i := slices.IndexFunc(conn.Files, func(f ConfigChange) bool { return f.Path == mf.Path }); i >= 0 {
			conn.other = conn.other.add(mf.Path, mf.Moved) // a path listed twice: its first list goes back
			continue
		}
		q, err := readConfig(c, mf.Path)
		if err == nil {
			q.After = q.Before
			err = restore(&q, mf.Moved)
		}
		if err != nil || q.Path != mf.Path {
			conn.other = conn.other.add(mf.Path, mf.Moved) // kept in the record, for another time
			continue
		}
		q.Diff = diff(q.Path, q.Before, q.After)
		conn.Files = append(conn.Files, q)
		conn.ifNot, conn.ifWritten = append(conn.ifNot, mf.Moved), append(conn.ifWritten, q.Kept)
	}
	return conn, nil
}

// ProjectFiles lists the project config files of client c on this
// machine that exist: for Cursor and VS Code, <folder>/.cursor/mcp.json
// and <folder>/.vscode/mcp.json of each folder the editor has opened (its
// workspaceStorage says which, at most 1,000) and of the folders in
// extra. Claude Code's projects are in its own file (~/.claude.json),
// which connecting reads whole.
func ProjectFiles(c Client, goos, home string, getenv func(string) string, extra ...string) []string {
	var rel, app string
	switch c.Key {
	case "cursor":
		rel, app = filepath.Join(".cursor", "mcp.json"), "Cursor"
	case "vscode":
		rel, app = filepath.Join(".vscode", "mcp.json"), "Code"
	default:
		return nil
	}
	folders := slices.Clone(extra)
	storage := filepath.Join(appConfigDir(goos, home, getenv, app), "User", "workspaceStorage")
	if dirs, err := os.ReadDir(storage); err == nil {
		for i, d := range dirs {
			if i == maxWorkspaces {
				break
			}
			data, err := os.ReadFile(filepath.Join(storage, d.Name(), "workspace.json"))
			if err != nil || len(data) > 64<<10 {
				continue
			}
			var ws struct {
				Folder string `json:"folder"`
			}
			if json.Unmarshal(data, &ws) != nil {
				continue
			}
			if u, err := url.Parse(ws.Folder); err == nil && u.Scheme == "file" && u.Path != "" {
				p := u.Path
				if goos == "windows" { // file:///c%3A/Users/…
					p = strings.TrimPrefix(p, "/")
				}
				folders = append(folders, filepath.FromSlash(p))
			}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range folders {
		if f == "" || f == home {
			continue
		}
		p := filepath.Join(f, rel)
		if seen[p] {
			continue
		}
		seen[p] = true
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

// maxWorkspaces bounds the editor folders ProjectFiles looks at.
const maxWorkspaces = 1000

// appConfigDir is where an app keeps its settings on goos (Claude
// Desktop's, VS Code's and Cursor's place).
func appConfigDir(goos, home string, getenv func(string) string, app string) string {
	switch goos {
	case "darwin":
		return filepath.Join(home, "Library", "Application Support", app)
	case "windows":
		if d := getenv("APPDATA"); d != "" {
			return filepath.Join(d, app)
		}
		return filepath.Join(home, "AppData", "Roaming", app)
	}
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, app)
	}
	return filepath.Join(home, ".config", app)
}

// Gate is what reaches a client's agent: whether Switchboard's entry is
// in the client's own file, and the entries that reach it around the
// gate, in that file and its project files.
type Gate struct {
	Client    Client
	Path      string
	Exists    bool // the client's own file is there
	Connected bool // it holds Switchboard's entry
	Around    []Around
}

// Around is an entry of a client's config other than Switchboard's.
type Around struct {
	File, Project, Name string
	// ServerID is the server Switchboard has that the entry launches
	// ("" if none): connecting moves it behind the gate.
	ServerID string
	Disabled bool // the client has it turned off
}

// GateOf reads what reaches client c from its file at path and its
// project files. A file that cannot be read is an error for its own file,
// and skipped for a project file.
func GateOf(c Client, path string, projects []string, m Managed) (Gate, error) {
	g := Gate{Client: c, Path: path}
	p, err := readConfig(c, path)
	if err != nil {
		return g, err
	}
	g.Path, g.Exists = p.Path, p.Exists
	add := func(file string, data []byte) error {
		entries, err := clientconfig.Entries(c.Format, data)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name == EntryName && e.Project == "" && file == g.Path {
				g.Connected = true
				continue
			}
			id, _ := m.Match(e.Server)
			g.Around = append(g.Around, Around{File: file, Project: e.Project, Name: e.Name, ServerID: id, Disabled: e.Server.Disabled})
		}
		return nil
	}
	if p.Exists {
		if err := add(g.Path, p.Before); err != nil {
			return g, fmt.Errorf("%s: %w", g.Path, err)
		}
	}
	for _, proj := range projects {
		q, err := readConfig(c, proj)
		if err != nil || !q.Exists || q.Path == g.Path {
			continue
		}
		add(q.Path, q.Before)
	}
	return g, nil
}

// GateHere is GateOf for client c on this system, for the user whose
// home is home.
func GateHere(c Client, home string, m Managed) (Gate, error) {
	cwd, _ := os.Getwd()
	return GateOf(c, c.ConfigPath(runtime.GOOS, home, os.Getenv), ProjectFiles(c, runtime.GOOS, home, os.Getenv, cwd), m)
}

// Package store keeps Switchboard's servers, discovery records, tools and
// policies in one bbolt file. Every change is one transaction, and change
// notifications are delivered only after the transaction has committed.
package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this code reads and writes.
// Version 2 added the approved tool definitions and the history; 3 the
// agent names.
const SchemaVersion = 3

// Bucket names. Tools and policies hold one nested bucket per server id,
// keyed by tool name, so that a re-verification rewriting tools never
// touches the policies a person set.
var (
	bucketMeta      = []byte("meta")
	bucketServers   = []byte("servers")
	bucketDiscovery = []byte("discovery")
	bucketTools     = []byte("tools")
	bucketPolicies  = []byte("policies")
	// bucketApproved holds, per server, the tool definitions the
	// policies were approved at, for the diff a changed tool shows.
	bucketApproved = []byte("approved")
	// bucketHistory holds, per server, its verifications by sequence.
	bucketHistory = []byte("history")
	// bucketAgentNames maps, per server, each agent name to its tool's
	// name (see agentname.go).
	bucketAgentNames = []byte("agent_names")

	// bucketGrants holds, per server, its OAuth grants by issuer (see
	// Grant).
	bucketGrants = []byte("grants")
	// perServerBuckets hold one nested bucket per server id.
	perServerBuckets = [][]byte{bucketTools, bucketPolicies, bucketApproved, bucketHistory, bucketAgentNames, bucketGrants}

	keySchemaVersion = []byte("schema_version")
	keyInstance      = []byte("instance") // random, set when the file is created
	keyRevision      = []byte("revision") // uint64, big-endian; +1 per change
	// keyOpen is set (to the time) by Open and deleted by Close, in
	// transactions they make anyway: found set at Open, it means the last
	// run ended without Close — a crash, a kill, a power cut.
	keyOpen = []byte("open_since")
)

// Errors returned by the store.
var (
	ErrNotFound      = errors.New("store: server not found")
	ErrToolNotFound  = errors.New("store: tool not found")
	ErrExists        = errors.New("store: a server with this id already exists")
	ErrInUse         = errors.New("store: database is in use")
	ErrDamaged       = errors.New("store: database file is damaged or not a switchboard database")
	ErrConfigChanged = errors.New("store: server configuration changed while verifying; result discarded")
	ErrLaunchChanged = errors.New("store: the server's command or URL changed since it was shown for confirmation")
)

// DefaultOpenTimeout is how long Open waits for the file lock.
const DefaultOpenTimeout = time.Second

// Options configure Open.
type Options struct {
	// Timeout bounds the wait for the file lock; DefaultOpenTimeout if zero.
	Timeout time.Duration
	// OnChange, if set, is called after every committed change, outside
	// the transaction, on the goroutine that made the change.
	OnChange func(Change)
	// NoSync skips the fsync after each commit. For tests and benchmarks
	// only: a crash of the machine (not just of the process) can then
	// lose acknowledged changes or damage the file.
	NoSync bool
	// PrivateDir says the file's directory holds only Switchboard's files
	// (the default location), so Open may tighten it to 0700.
	PrivateDir bool
	// Warn, if set, hears about permissions Open repaired or could not
	// repair (see securePermissions).
	Warn func(msg string)
	// BeforeCommit, if set, is called in the transaction of every change
	// (those OnChange hears of) with what it changes, after its writes,
	// just before the commit. An error
	// it returns fails the transaction the way a failed write to the file
	// does: nothing is committed or announced, and the caller gets the
	// error (wrapped). It is for tests of a full disk or a failing
	// device; Open's own transaction and Close's do not call it.
	BeforeCommit func([]Change) error
}

// DB is an open Switchboard store. It is safe for concurrent use.
type DB struct {
	bolt         *bolt.DB
	path         string
	onChange     func(Change)
	beforeCommit func([]Change) error
	claim        *claim
	closeOnce    sync.Once
	closeErr     error

	unsaved unsavedFailures // failures not written yet (see unsaved.go)

	instance string        // keyInstance, hex
	rev      atomic.Uint64 // the newest committed revision
}

// Open opens (creating if needed) the store at path, creates its buckets,
// records the schema version and marks verifications left running by a
// crash as interrupted. A file open elsewhere yields ErrInUse: at once if
// it is open in this process, after opts.Timeout if another process holds
// it. A file that is empty, not a database, or damaged yields ErrDamaged,
// naming the file and saying what to do; it is never repaired or
// re-initialised. Every existing file is checked in full first — every
// page, and every key and value — in a child process (see
// RunChildCheckIfAsked), because bbolt would panic or fault, at open or
// on any later read, on damage that nothing short of that finds. The file
// is kept 0600 and a private directory 0700 (see securePermissions).
func Open(path string, opts Options) (*DB, error) {
	if opts.Timeout == 0 {
		opts.Timeout = DefaultOpenTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), dirPerm); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	for _, note := range securePermissions(path, opts.PrivateDir) {
		if opts.Warn != nil {
			opts.Warn(note)
		}
	}
	c, err := claimPath(path)
	if err != nil {
		return nil, err
	}
	db, err := open(path, opts)
	if err != nil {
		c.release()
		return nil, err
	}
	c.opened()
	db.claim = c
	return db, nil
}

// open opens a claimed path, checking it in a child first unless it is
// new.
func open(path string, opts Options) (*DB, error) {
	exists, why, err := inspect(path)
	if err != nil {
		return nil, err
	}
	if exists {
		if err := checkInChild(context.Background(), path, opts.Timeout, why); err != nil {
			return nil, err
		}
	}
	db, err := start(path, opts, exists)
	if errors.Is(err, errUnclean) {
		// Made meanwhile by a run that did not close it. start has
		// closed the file again, so the child can open it.
		if err := checkInChild(context.Background(), path, opts.Timeout, "its last run did not shut down cleanly"); err != nil {
			return nil, err
		}
		db, err = start(path, opts, true)
	}
	return db, err
}

// errUnclean is start's answer for a file whose last run did not end with
// Close, when the file has not been checked.
var errUnclean = errors.New("store: last shutdown was not clean")

// start opens the file with bbolt and initialises it. Damage that makes
// bbolt panic or fault on the way becomes an ErrDamaged error (the check
// has ruled it out; this is a safety net).
func start(path string, opts Options, checked bool) (*DB, error) {
	var bdb *bolt.DB
	err := catchDamage(path, func() error {
		var err error
		bdb, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync})
		return err
	})
	if err != nil {
		return nil, openError(path, err)
	}
	db := &DB{bolt: bdb, path: path, onChange: opts.OnChange, beforeCommit: opts.BeforeCommit}
	if err := catchDamage(path, func() error { return db.init(checked) }); err != nil {
		bdb.Close()
		return nil, err
	}
	return db, nil
}

// openError explains why bbolt could not open path.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s (is another switchboard running?)", ErrInUse, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return &damagedError{path: path, problem: fmt.Sprintf("is not a valid switchboard database (%v)", err)}
	case errors.Is(err, ErrDamaged):
		return err
	}
	return fmt.Errorf("store: open %s: %w", path, err)
}

// init creates buckets, checks the schema version, reconciles
// verifications interrupted by a crash and marks the file open, in one
// transaction. Unless checked, it returns errUnclean, and changes nothing,
// if the last run did not close the file.
func (db *DB) init(checked bool) error {
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); !checked && meta != nil && meta.Get(keyOpen) != nil {
			return errUnclean
		}
		for _, name := range append([][]byte{bucketMeta, bucketServers, bucketDiscovery, bucketAudit}, perServerBuckets...) {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		have := SchemaVersion // a new file
		if v := meta.Get(keySchemaVersion); v != nil {
			if err := json.Unmarshal(v, &have); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			if have > SchemaVersion {
				return fmt.Errorf("schema version %d is newer than this switchboard understands (%d); upgrade switchboard", have, SchemaVersion)
			}
		}
		if err := migrate(tx, have); err != nil {
			return err
		}
		if err := putJSON(meta, keySchemaVersion, SchemaVersion); err != nil {
			return err
		}
		if meta.Get(keyInstance) == nil {
			id := make([]byte, 8)
			rand.Read(id)
			if err := meta.Put(keyInstance, []byte(hex.EncodeToString(id))); err != nil {
				return err
			}
		}
		db.instance = string(meta.Get(keyInstance))
		if err := meta.Put(keyOpen, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			return err
		}
		if err := reconcileInterrupted(tx); err != nil {
			return err
		}
		rev, err := bumpRevision(tx)
		db.rev.Store(rev)
		return err
	})
	if err != nil && !errors.Is(err, errUnclean) {
		return fmt.Errorf("store: initialise %s: %w", db.path, err)
	}
	return err
}

// migrate brings a file of schema version have up to SchemaVersion. Each
// step is idempotent, and runs in the transaction that records the new
// version.
func migrate(tx *bolt.Tx, have int) error {
	if have < 2 {
		if err := migrateApproved(tx); err != nil {
			return fmt.Errorf("migrate to schema 2: %w", err)
		}
	}
	if have < 3 {
		if err := migrateAgentNames(tx); err != nil {
			return fmt.Errorf("migrate to schema 3: %w", err)
		}
	}
	return nil
}

// bumpRevision advances the revision inside a write transaction.
func bumpRevision(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	rev := readRevision(tx) + 1
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], rev)
	return rev, meta.Put(keyRevision, buf[:])
}

func readRevision(tx *bolt.Tx) uint64 {
	if v := tx.Bucket(bucketMeta).Get(keyRevision); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// Revision identifies the committed state of the store: it changes with
// every committed change, and differs between database files. Anything
// computed from the store at one revision (a rendered catalog, an ETag)
// stays valid until the revision changes. Once a change method returned,
// Revision reflects it.
func (db *DB) Revision() string { return db.revisionString(db.rev.Load()) }

func (db *DB) revisionString(rev uint64) string {
	return db.instance + "-" + strconv.FormatUint(rev, 10)
}

// noteRevision records a committed revision; commits may report out of
// order, so the newest wins.
func (db *DB) noteRevision(rev uint64) {
	for {
		cur := db.rev.Load()
		if rev <= cur || db.rev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// reconcileInterrupted marks every record left running as interrupted.
func reconcileInterrupted(tx *bolt.Tx) error {
	b := tx.Bucket(bucketDiscovery)
	var updates []Discovery
	err := b.ForEach(func(k, v []byte) error {
		var d Discovery
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("decode discovery %q: %w", k, err)
		}
		if d.Status == StatusRunning {
			d.Status = StatusInterrupted
			d.Error = &VerifyError{
				Class:      "cancelled",
				Message:    "switchboard stopped while this verification was running",
				Suggestion: "Verify again.",
			}
			updates = append(updates, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range updates {
		if err := putJSON(b, []byte(d.ServerID), d); err != nil {
			return err
		}
	}
	return nil
}

// Close marks the file as shut down cleanly and closes it. It must not
// be called while other calls are running; calls after the first return
// its result.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.unsaved.stop()
		mark := db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyOpen) })
		if mark != nil {
			mark = fmt.Errorf("store: mark %s closed (its next open will check it): %w", db.path, mark)
		}
		db.closeErr = errors.Join(mark, db.bolt.Close())
		db.claim.release()
	})
	return db.closeErr
}

// Path returns the file the store was opened from.
func (db *DB) Path() string { return db.path }

// update runs fn in one read-write transaction and, only if it committed,
// announces the change. An error of fn is returned as it is; a failure to
// commit (the file could not be written) comes as a *writeError.
func (db *DB) update(change Change, fn func(tx *bolt.Tx) error) error {
	return db.updateMany(func(tx *bolt.Tx) ([]Change, error) {
		return []Change{change}, fn(tx)
	})
}

// updateMany is update for a transaction that makes several changes, which
// fn returns, and announces them in order.
func (db *DB) updateMany(fn func(tx *bolt.Tx) ([]Change, error)) error {
	var (
		rev      uint64
		changes  []Change
		written  bool // fn is done: what fails from here on is the write
		writeErr error
	)
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		var err error
		if changes, err = fn(tx); err != nil {
			return err
		}
		if rev, err = bumpRevision(tx); err != nil {
			return err
		}
		written = true
		if db.beforeCommit != nil {
			writeErr = db.beforeCommit(changes)
		}
		return writeErr
	})
	if err != nil {
		if written {
			return &writeError{path: db.path, err: err}
		}
		return err
	}
	db.noteRevision(rev)
	if db.onChange != nil {
		for _, c := range changes {
			db.onChange(c)
		}
	}
	db.unsaved.kick()
	return nil
}

// writeError is a change that could not be written to the file: the
// transaction was rolled back, and the file holds what it held before.
// It matches the underlying error, and syscall.ENOSPC for a full disk
// even where bbolt kept only the message of the error (growing the file).
type writeError struct {
	path string
	err  error
}

func (e *writeError) Error() string {
	return fmt.Sprintf("store: could not write %s: %v", e.path, e.err)
}

func (e *writeError) Unwrap() []error {
	if !errors.Is(e.err, syscall.ENOSPC) && strings.Contains(e.err.Error(), syscall.ENOSPC.Error()) {
		return []error{e.err, syscall.ENOSPC}
	}
	return []error{e.err}
}

// CreateServer stores a new server. It returns ErrExists if the id is
// taken. A new server's launch is not confirmed, whatever s says.
func (db *DB) CreateServer(s Server) error {
	now := time.Now().UTC()
	s.CreatedAt, s.UpdatedAt = now, now
	s.LaunchConfirmed = ""
	s.SavedConfigHash = s.ConfigHash()
	return db.update(Change{ServerID: s.ID, Created: true}, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketServers)
		if b.Get([]byte(s.ID)) != nil {
			return ErrExists
		}
		if err := putJSON(b, []byte(s.ID), s); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketDiscovery), []byte(s.ID), Discovery{ServerID: s.ID, Status: StatusNever})
	})
}

// UpdateServer replaces a stored server, keeping its creation time and
// launch confirmation (which no longer matches if the launch changed). It
// returns ErrNotFound if there is no server with s.ID. Tools, policies and
// the discovery record are kept; a changed ConfigHash shows as stale via
// the record's config hash.
func (db *DB) UpdateServer(s Server) error {
	return db.update(Change{ServerID: s.ID}, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketServers)
		var old Server
		if err := getJSON(b, []byte(s.ID), &old); err != nil {
			return err
		}
		s.CreatedAt = old.CreatedAt
		s.UpdatedAt = time.Now().UTC()
		s.LaunchConfirmed = old.LaunchConfirmed
		s.SavedConfigHash = s.ConfigHash()
		return putJSON(b, []byte(s.ID), s)
	})
}

// ConfirmLaunch records that a person saw and confirmed the server's
// launch configuration with the given LaunchHash. It returns
// ErrLaunchChanged if the stored server's launch is no longer the one
// confirmed (it was edited in between), and ErrNotFound.
func (db *DB) ConfirmLaunch(id, launchHash string) error {
	return db.update(Change{ServerID: id}, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketServers)
		var s Server
		if err := getJSON(b, []byte(id), &s); err != nil {
			return err
		}
		if s.LaunchHash() != launchHash {
			return ErrLaunchChanged
		}
		if s.LaunchConfirmed == launchHash {
			return nil
		}
		s.LaunchConfirmed = launchHash
		return putJSON(b, []byte(id), s)
	})
}

// DeleteServer removes a server with its discovery record, tools and
// policies. It returns ErrNotFound if there is no such server.
func (db *DB) DeleteServer(id string) error {
	u := db.unsaved.get(id)
	err := db.update(Change{ServerID: id, Deleted: true}, func(tx *bolt.Tx) error {
		key := []byte(id)
		b := tx.Bucket(bucketServers)
		if b.Get(key) == nil {
			return ErrNotFound
		}
		if err := b.Delete(key); err != nil {
			return err
		}
		if err := tx.Bucket(bucketDiscovery).Delete(key); err != nil {
			return err
		}
		for _, name := range perServerBuckets {
			if err := deleteServerBucket(tx, name, key); err != nil {
				return err
			}
		}
		return nil
	})
	if u != nil && err == nil {
		db.unsaved.forget(id, u)
	}
	return err
}

// Server returns the server with the given id, or ErrNotFound.
func (db *DB) Server(id string) (Server, error) {
	var s Server
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return getJSON(tx.Bucket(bucketServers), []byte(id), &s)
	})
	return s, err
}

// Summary returns a server and its discovery record, or ErrNotFound.
func (db *DB) Summary(id string) (Summary, error) {
	var sum Summary
	err := db.bolt.View(func(tx *bolt.Tx) error {
		var err error
		sum, err = readSummary(tx, []byte(id))
		return err
	})
	if err == nil {
		db.unsaved.overlay(&sum)
	}
	return sum, err
}

// Summaries returns every server with its discovery record, ordered by id.
// The result is empty, not nil, when there are no servers.
func (db *DB) Summaries() ([]Summary, error) {
	out := []Summary{}
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketServers).ForEach(func(k, _ []byte) error {
			sum, err := readSummary(tx, k)
			if err != nil {
				return err
			}
			db.unsaved.overlay(&sum)
			out = append(out, sum)
			return nil
		})
	})
	return out, err
}

func readSummary(tx *bolt.Tx, key []byte) (Summary, error) {
	var sum Summary
	if err := getJSON(tx.Bucket(bucketServers), key, &sum.Server); err != nil {
		return sum, err
	}
	sum.Discovery = Discovery{ServerID: string(key), Status: StatusNever}
	if err := getJSON(tx.Bucket(bucketDiscovery), key, &sum.Discovery); err != nil && !errors.Is(err, ErrNotFound) {
		return sum, err
	}
	return sum, nil
}

// MarkRunning records that a verification job started for the server.
// It returns ErrNotFound if the server is gone.
func (db *DB) MarkRunning(id, jobID string, at time.Time) error {
	return db.updateDiscovery(id, "", Change{ServerID: id}, func(_ *bolt.Tx, _ Server, d *Discovery) error {
		d.Status = StatusRunning
		d.JobID = jobID
		d.LastAttemptAt = at.UTC()
		return nil
	})
}

// ErrOtherJob is AddLateWarnings' answer when the record belongs to
// another (newer) verification by now.
var ErrOtherJob = errors.New("store: the discovery record is of another verification")

// AddLateWarnings appends warnings that arrived after a verification's
// result was recorded (processes found while its server was stopped) to
// the discovery record, if the record is still that job's; otherwise it
// returns ErrOtherJob and changes nothing.
func (db *DB) AddLateWarnings(id, jobID string, warnings []string) error {
	return db.updateDiscovery(id, "", Change{ServerID: id}, func(_ *bolt.Tx, _ Server, d *Discovery) error {
		if d.JobID != jobID {
			return ErrOtherJob
		}
		d.Warnings = append(d.Warnings, warnings...)
		return nil
	})
}

// RecordSuccess stores a successful verification: the discovery record
// (with the Delta against the tools offered before), the tools (merged
// with what was known), a default policy for every new tool, and a
// history entry. Policies already present are never changed. If the
// server's configuration changed since v.ConfigHash, nothing but the
// record's status and the history change and ErrConfigChanged is
// returned.
func (db *DB) RecordSuccess(id string, v Verification) error {
	var discarded bool
	err := db.updateDiscovery(id, v.JobID, Change{ServerID: id, Tools: true, History: true}, func(tx *bolt.Tx, s Server, d *Discovery) error {
		entry := HistoryEntry{JobID: v.JobID, Trigger: v.Trigger, StartedAt: v.StartedAt, FinishedAt: v.FinishedAt}
		if s.ConfigHash() != v.ConfigHash {
			discarded = true
			entry.Outcome, entry.Error = OutcomeDiscarded, markDiscarded(d, v.JobID, v.FinishedAt)
			return appendHistory(tx, id, entry)
		}
		hash, delta, err := mergeTools(tx, s, v.Tools, v.FinishedAt)
		if err != nil {
			return err
		}
		entry.Outcome, entry.Delta, entry.ToolCount = StatusSuccess, &delta, len(v.Tools)
		entry.ServerVersion, entry.PreviousVersion = v.ServerVersion, d.ServerVersion
		*d = Discovery{
			ServerID:        id,
			Status:          StatusSuccess,
			JobID:           v.JobID,
			LastAttemptAt:   v.StartedAt.UTC(),
			VerifiedAt:      v.FinishedAt.UTC(),
			DurationMS:      v.FinishedAt.Sub(v.StartedAt).Milliseconds(),
			Timings:         v.Timings,
			ProtocolVersion: v.ProtocolVersion,
			ListTTLMS:       v.ListTTLMS,
			CacheScope:      v.CacheScope,
			Isolation:       v.Isolation,
			ServerName:      v.ServerName,
			ServerVersion:   v.ServerVersion,
			Capabilities:    v.Capabilities,
			Instructions:    v.Instructions,
			ConfigHash:      v.ConfigHash,
			ToolsHash:       hash,
			ToolCount:       len(v.Tools),
			Warnings:        v.Warnings,
			Delta:           delta.counts(),
		}
		if d.Changed, err = countChanged(tx, id); err != nil {
			return err
		}
		return appendHistory(tx, id, entry)
	})
	if err == nil && discarded {
		return ErrConfigChanged
	}
	return err
}

// RecordFailure stores a verification that did not succeed, and its
// history entry. The tools and the time of the last success are kept, so
// readers keep serving them, marked stale. A failure for an outdated
// configuration is discarded the same way as in RecordSuccess.
//
// A failure that cannot be written (a full disk) is not lost: the error
// is returned, and the store keeps f in memory, where every read of the
// server's record shows it, until it is written — with the next change
// of that record, or by a retry after any change committed or after a
// pause (see retryUnsaved) — or a newer verification's record replaced
// it. This way a verification whose outcome could not be saved never
// stays "running" until a restart.
func (db *DB) RecordFailure(id string, f Failure) error {
	var discarded bool
	var stored string // the job of the record as stored
	err := db.updateDiscovery(id, f.JobID, Change{ServerID: id, History: true}, func(tx *bolt.Tx, s Server, d *Discovery) error {
		stored = d.JobID
		entry := applyFailure(s, d, f)
		discarded = entry.Outcome == OutcomeDiscarded
		return appendHistory(tx, id, entry)
	})
	var we *writeError
	if errors.As(err, &we) {
		db.keepUnsaved(id, &unsaved{f: f, stored: stored})
	}
	if err == nil && discarded {
		return ErrConfigChanged
	}
	return err
}

// applyFailure changes d as recording f does, and returns f's history
// entry (whose outcome is OutcomeDiscarded if s's configuration changed
// since f's).
func applyFailure(s Server, d *Discovery, f Failure) HistoryEntry {
	entry := HistoryEntry{JobID: f.JobID, Trigger: f.Trigger, StartedAt: f.StartedAt, FinishedAt: f.FinishedAt}
	if s.ConfigHash() != f.ConfigHash {
		entry.Outcome, entry.Error = OutcomeDiscarded, markDiscarded(d, f.JobID, f.FinishedAt)
		return entry
	}
	e := f.Error
	d.Status = f.Status
	d.JobID = f.JobID
	d.LastAttemptAt = f.StartedAt.UTC()
	d.DurationMS = f.FinishedAt.Sub(f.StartedAt).Milliseconds()
	d.Timings = f.Timings
	d.Error = &e
	brief := VerifyError{Class: e.Class, Phase: e.Phase, Message: e.Message, Suggestion: e.Suggestion}
	entry.Outcome, entry.Error, entry.ToolCount = f.Status, &brief, d.ToolCount
	return entry
}

// markDiscarded records on the discovery record that job's result was
// discarded, unless the record already belongs to a later job (that of
// the new configuration may have finished first), and returns the reason.
func markDiscarded(d *Discovery, job string, at time.Time) *VerifyError {
	reason := &VerifyError{
		Class:      "cancelled",
		Message:    "the server's configuration changed while it was being verified; the result was discarded",
		Suggestion: "Verify again to check the new configuration.",
	}
	if d.JobID != "" && d.JobID != job {
		return reason
	}
	d.Status = StatusCancelled
	d.Error = reason
	if d.LastAttemptAt.IsZero() {
		d.LastAttemptAt = at.UTC()
	}
	return reason
}

// updateDiscovery reads the server and its record, lets fn change the
// record, and writes it back, all in one transaction. A failure of the
// server not written yet (see RecordFailure) is written first, unless it
// is of job, whose outcome fn records.
func (db *DB) updateDiscovery(id, job string, change Change, fn func(tx *bolt.Tx, s Server, d *Discovery) error) error {
	u := db.unsaved.get(id)
	err := db.updateMany(func(tx *bolt.Tx) ([]Change, error) {
		sum, err := readSummary(tx, []byte(id))
		if err != nil {
			return nil, err
		}
		d := sum.Discovery
		if u != nil && u.f.JobID != job && u.applies(d) {
			if err := appendHistory(tx, id, applyFailure(sum.Server, &d, u.f)); err != nil {
				return nil, err
			}
			change.History = true
		}
		if err := fn(tx, sum.Server, &d); err != nil {
			return nil, err
		}
		return []Change{change}, putJSON(tx.Bucket(bucketDiscovery), []byte(id), d)
	})
	if u != nil && err == nil {
		db.unsaved.forget(id, u)
	}
	return err
}

// mergeTools writes the tools of a successful verification for server s:
// known tools keep first_seen, tools no longer offered become missing, a
// tool whose pin differs from the one its policy was approved at becomes
// changed (unless discovery marked it oversized or invalid, which it
// stays), and every new tool gets its default policy (see initialPolicy),
// with its definition recorded as the approved one. It returns the tools
// hash (over the sorted pins) and what changed against the tools offered
// before.
func mergeTools(tx *bolt.Tx, s Server, tools []Tool, at time.Time) (string, Delta, error) {
	at = at.UTC()
	key := []byte(s.ID)
	var delta Delta
	var added, removed, changed []string
	tb, err := tx.Bucket(bucketTools).CreateBucketIfNotExists(key)
	if err != nil {
		return "", delta, err
	}
	pb, err := tx.Bucket(bucketPolicies).CreateBucketIfNotExists(key)
	if err != nil {
		return "", delta, err
	}
	seen := make(map[string]bool, len(tools))
	pins := make([]string, 0, len(tools))
	for _, t := range tools {
		name := []byte(t.Name)
		seen[t.Name] = true
		pins = append(pins, t.Pin)
		t.ServerID = s.ID
		t.FirstSeen, t.LastSeen = at, at
		var old Tool
		switch err := getJSON(tb, name, &old); {
		case err == nil:
			t.FirstSeen = old.FirstSeen
			t.AgentName = old.AgentName
			switch {
			case old.State == ToolMissing:
				added = append(added, t.Name)
			case old.Pin != t.Pin:
				changed = append(changed, t.Name)
			}
		case errors.Is(err, ErrNotFound):
			added = append(added, t.Name)
		default:
			return "", delta, err
		}
		var p Policy
		switch err := getJSON(pb, name, &p); {
		case errors.Is(err, ErrNotFound):
			p = Policy{Pin: t.Pin, SetBy: PolicySetByDefault, SetAt: at}
			p.Policy, p.Reason = initialPolicy(s.DefaultPolicy, t.Annotations)
			if err := putJSON(pb, name, p); err != nil {
				return "", delta, err
			}
			if err := putApproved(tx, t); err != nil {
				return "", delta, err
			}
		case err != nil:
			return "", delta, err
		}
		if err := assignAgentName(tx, &t, t.AgentName); err != nil {
			return "", delta, err
		}
		switch {
		case t.State == ToolOversized || t.State == ToolInvalid:
			// as discovery found it, whatever its policy
		case p.Pin != t.Pin:
			t.State = ToolChanged
		default:
			t.State = ToolActive
		}
		if err := putJSON(tb, name, t); err != nil {
			return "", delta, err
		}
	}
	var missing []Tool
	err = tb.ForEach(func(k, v []byte) error {
		if seen[string(k)] {
			return nil
		}
		var t Tool
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode tool %q: %w", k, err)
		}
		if t.State != ToolMissing {
			t.State = ToolMissing
			missing = append(missing, t)
			removed = append(removed, t.Name)
		}
		return nil
	})
	if err != nil {
		return "", delta, err
	}
	for _, t := range missing {
		if err := putJSON(tb, []byte(t.Name), t); err != nil {
			return "", delta, err
		}
	}
	for _, l := range []struct {
		names []string
		list  *[]string
		n     *int
	}{{added, &delta.AddedNames, &delta.Added}, {removed, &delta.RemovedNames, &delta.Removed}, {changed, &delta.ChangedNames, &delta.Changed}} {
		sort.Strings(l.names)
		for _, name := range l.names {
			delta.add(l.list, l.n, name)
		}
	}
	sort.Strings(pins)
	return hashStrings(pins), delta, nil
}

// Tools returns the server's tools (including missing ones) with their
// policies, ordered by name. It returns ErrNotFound if the server does not
// exist, and an empty slice if it was never verified.
func (db *DB) Tools(id string) ([]ToolEntry, error) {
	var out []ToolEntry
	err := db.bolt.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return ErrNotFound
		}
		var err error
		out, err = readTools(tx, []byte(id))
		return err
	})
	return out, err
}

// AllTools returns every server's tools with their policies, grouped by
// server id in id order, tools ordered by name.
func (db *DB) AllTools() ([]ToolEntry, error) {
	out := []ToolEntry{}
	_, err := db.ForEachTool(func(e ToolEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// ForEachTool calls fn with every server's tools and their policies, in
// AllTools' order, in one read transaction, and returns the revision (see
// Revision) they were read at. Unlike AllTools it holds one tool at a
// time, so a whole catalog can be rendered without decoding all of it
// into memory at once. An error from fn stops the walk and is returned.
func (db *DB) ForEachTool(fn func(ToolEntry) error) (string, error) {
	return db.Catalog(func(_ *Summary, e ToolEntry) error { return fn(e) })
}

// Catalog is ForEachTool that also hands over each tool's server and
// discovery record, read in the same transaction.
func (db *DB) Catalog(fn func(*Summary, ToolEntry) error) (string, error) {
	var rev string
	err := db.bolt.View(func(tx *bolt.Tx) error {
		rev = db.revisionString(readRevision(tx))
		return tx.Bucket(bucketServers).ForEach(func(k, _ []byte) error {
			sum, err := readSummary(tx, k)
			if err != nil {
				return err
			}
			db.unsaved.overlay(&sum)
			return eachTool(tx, k, func(e ToolEntry) error { return fn(&sum, e) })
		})
	})
	return rev, err
}

func readTools(tx *bolt.Tx, key []byte) ([]ToolEntry, error) {
	out := []ToolEntry{}
	err := eachTool(tx, key, func(e ToolEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// eachTool decodes one server's tools, with their policies, one at a time.
func eachTool(tx *bolt.Tx, key []byte, fn func(ToolEntry) error) error {
	tb := tx.Bucket(bucketTools).Bucket(key)
	if tb == nil {
		return nil
	}
	pb := tx.Bucket(bucketPolicies).Bucket(key)
	return tb.ForEach(func(k, v []byte) error {
		var e ToolEntry
		if err := json.Unmarshal(v, &e.Tool); err != nil {
			return fmt.Errorf("decode tool %q: %w", k, err)
		}
		if pb != nil {
			if err := getJSON(pb, k, &e.Policy); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		e.Effective = effectivePolicy(e.Tool, e.Policy)
		return fn(e)
	})
}

// SetPolicy records a person's policy for one tool. The policy applies
// to the definition it was approved at: setting it on a changed tool does
// not approve the change (see ApproveTool), so the tool stays changed,
// and denied, until a person approves the new version against the diff.
// It returns ErrNotFound or ErrToolNotFound, and the updated entry.
func (db *DB) SetPolicy(id, tool, policy, by string) (ToolEntry, error) {
	var e ToolEntry
	err := db.update(Change{ServerID: id, Tools: true}, func(tx *bolt.Tx) error {
		var err error
		if e, err = readTool(tx, id, tool); err != nil {
			return err
		}
		pb, err := tx.Bucket(bucketPolicies).CreateBucketIfNotExists([]byte(id))
		if err != nil {
			return err
		}
		pin := e.Policy.Pin
		if pin == "" { // a tool without a policy: this is its first approval
			pin = e.Pin
			if err := putApproved(tx, e.Tool); err != nil {
				return err
			}
		}
		e.Policy = Policy{Policy: policy, Pin: pin, SetBy: by, SetAt: time.Now().UTC()}
		if err := putJSON(pb, []byte(tool), e.Policy); err != nil {
			return err
		}
		e.Effective = effectivePolicy(e.Tool, e.Policy)
		return nil
	})
	return e, err
}

// putJSON stores v as JSON under key.
func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, data)
}

// getJSON decodes the value under key into v, or returns ErrNotFound. The
// bytes are decoded inside the transaction, and json.Unmarshal copies
// what it keeps (strings, and json.RawMessage values), so nothing outlives
// it.
func getJSON(b *bolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %q: %w", key, err)
	}
	return nil
}

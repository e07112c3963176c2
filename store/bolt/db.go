// Package bolt is the store's embedded backend: Switchboard's servers,
// discovery records, tools, policies, history, audit and credentials in
// one bbolt file. Every change is one transaction, applying the store's
// rules, and change notifications are delivered only after the
// transaction has committed. Everything about the file is here: opening it
// under a lock timeout, checking it in full in a child process, refusing
// damage, keeping its permissions, backups, and the durability tests.
package bolt

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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/switchboard-dev/switchboard/store"
)

// SchemaVersion is the layout version this code reads and writes.
// Version 2 added the approved tool definitions and the history; 3 the
// agent names; 4 the browser sessions; 5 the profiles; 6 the offer
// records; 7 sealed secrets (store/sealed): values an earlier release
// would take for the secrets themselves, so it must refuse the file.
// Nothing is rewritten here: serve seals the secrets a file of 6 keeps
// in clear when it finds its key (sealed.Store.Reseal).
const SchemaVersion = 7

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
	perServerBuckets = [][]byte{bucketTools, bucketPolicies, bucketApproved, bucketHistory, bucketAgentNames, bucketGrants, bucketListed, bucketOffers}

	keySchemaVersion = []byte("schema_version")
	keyInstance      = []byte("instance") // random, set when the file is created
	keyRevision      = []byte("revision") // uint64, big-endian; +1 per change
	// keyOpen is set (to the time) by Open and deleted by Close, in
	// transactions they make anyway: found set at Open, it means the last
	// run ended without Close — a crash, a kill, a power cut.
	keyOpen = []byte("open_since")
)

// DefaultOpenTimeout is how long Open waits for the file lock.
const DefaultOpenTimeout = time.Second

// Options configure Open.
type Options struct {
	// Timeout bounds the wait for the file lock; DefaultOpenTimeout if zero.
	Timeout time.Duration
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
	// (those subscribers hear of) with what it changes, after its writes,
	// just before the commit. An error
	// it returns fails the transaction the way a failed write to the file
	// does: nothing is committed or announced, and the caller gets the
	// error (wrapped). It is for tests of a full disk or a failing
	// device; Open's own transaction and Close's do not call it.
	BeforeCommit func([]store.Change) error
	// SealKey keys the seal that lets a file closed cleanly skip the full
	// check at its next open (see seal.go): with one, only a seal made
	// with it is trusted. Derive it from the secret key
	// (secretkey.SealKey). SealWith sets it after Open.
	SealKey []byte
}

// DB is an open Switchboard store. It is safe for concurrent use.
type DB struct {
	bolt         *bbolt.DB
	path         string
	subs         store.Subscribers
	beforeCommit func([]store.Change) error
	claim        *claim
	closeOnce    sync.Once
	closeErr     error

	sealKey atomic.Pointer[[]byte] // keys the seal Close writes (see seal.go)

	unsaved unsavedFailures // failures not written yet (see unsaved.go)
	damaged atomic.Bool     // a transaction found the file damaged (see noteDamage)

	instance string                       // keyInstance, hex
	rev      atomic.Uint64                // the newest committed revision
	revText  atomic.Pointer[revisionText] // the last one Revision made
	// revMu orders Revision after commits: a change holds it from before
	// its transaction until its revision is noted, so that whoever read
	// the change's data and then asks for the revision gets its revision
	// (or a later one), never the one before (the MCP offer is rebuilt
	// when the revision moves).
	revMu sync.RWMutex
}

// SealWith keys the seal Close writes with key (see Options.SealKey), for
// a key found after Open (a new store's first).
func (db *DB) SealWith(key []byte) {
	if key != nil {
		k := append([]byte(nil), key...)
		db.sealKey.Store(&k)
	}
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
// on any later read, on damage that nothing short of that finds; unless
// its seal says it is, byte for byte, the file the last run closed (see
// seal.go). The file is kept 0600 and a private directory 0700 (see
// securePermissions).
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
	if err := refuseForeign(path); err != nil {
		return nil, err
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
// new or sealed.
func open(path string, opts Options) (*DB, error) {
	exists, why, err := inspect(path)
	if err != nil {
		return nil, err
	}
	if exists && (why != "" || !sealed(path, opts.SealKey)) {
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
	var bdb *bbolt.DB
	err := catchDamage(path, func() error {
		var err error
		bdb, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync})
		return err
	})
	if err != nil {
		return nil, openError(path, err)
	}
	breakSeal(path) // this process holds the lock now, and writes next
	db := &DB{bolt: bdb, path: path, beforeCommit: opts.BeforeCommit}
	db.SealWith(opts.SealKey)
	if err := db.init(checked); err != nil {
		bdb.Close()
		return nil, err
	}
	return db, nil
}

// openError explains why bbolt could not open path.
func openError(path string, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s (is another switchboard running?)", store.ErrInUse, path)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return &damagedError{path: path, problem: fmt.Sprintf("is not a valid switchboard database (%v)", err)}
	case errors.Is(err, store.ErrDamaged):
		return err
	}
	return fmt.Errorf("store: open %s: %w", path, err)
}

// init creates buckets, checks the schema version, reconciles
// verifications interrupted by a crash and marks the file open, in one
// transaction. Unless checked, it returns errUnclean, and changes nothing,
// if the last run did not close the file.
func (db *DB) init(checked bool) error {
	err := db.write(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); !checked && meta != nil && meta.Get(keyOpen) != nil {
			return errUnclean
		}
		for _, name := range append([][]byte{bucketMeta, bucketServers, bucketDiscovery, bucketAudit, bucketSessions, bucketProfiles}, perServerBuckets...) {
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
	if err != nil && !errors.Is(err, errUnclean) && !errors.Is(err, store.ErrDamaged) {
		return fmt.Errorf("store: initialise %s: %w", db.path, err)
	}
	return err
}

// migrate brings a file of schema version have up to SchemaVersion. Each
// step is idempotent, and runs in the transaction that records the new
// version.
func migrate(tx *bbolt.Tx, have int) error {
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
	if have < 4 {
		// Sessions were kept in memory only: a file of schema 3 has
		// none. The bucket is made above, as for a new file.
		if _, err := tx.CreateBucketIfNotExists(bucketSessions); err != nil {
			return fmt.Errorf("migrate to schema 4: %w", err)
		}
	}
	if have < 5 {
		// Profiles are new in schema 5; the bucket is made above, as
		// for a new file.
		if _, err := tx.CreateBucketIfNotExists(bucketProfiles); err != nil {
			return fmt.Errorf("migrate to schema 5: %w", err)
		}
	}
	if have < 6 {
		if err := migrateOffers(tx); err != nil {
			return fmt.Errorf("migrate to schema 6: %w", err)
		}
	}
	return nil
}

// bumpRevision advances the revision inside a write transaction.
func bumpRevision(tx *bbolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	rev := readRevision(tx) + 1
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], rev)
	return rev, meta.Put(keyRevision, buf[:])
}

func readRevision(tx *bbolt.Tx) uint64 {
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
func (db *DB) Revision() string {
	db.revMu.RLock()
	defer db.revMu.RUnlock()
	rev := db.rev.Load()
	if last := db.revText.Load(); last != nil && last.rev == rev {
		return last.text // asked for on every request to /mcp: made once
	}
	text := db.revisionString(rev)
	db.revText.Store(&revisionText{rev, text})
	return text
}

// revisionText is a revision and its string.
type revisionText struct {
	rev  uint64
	text string
}

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
func reconcileInterrupted(tx *bbolt.Tx) error {
	b := tx.Bucket(bucketDiscovery)
	var updates []store.Discovery
	err := b.ForEach(func(k, v []byte) error {
		// Its status first: a whole record, with its timings and
		// warnings, is decoded only for a verification to mark.
		var head struct {
			Status store.Status `json:"status"`
		}
		if err := json.Unmarshal(v, &head); err != nil {
			return fmt.Errorf("decode discovery %q: %w", k, err)
		}
		if head.Status != store.StatusRunning {
			return nil
		}
		var d store.Discovery
		if err := json.Unmarshal(v, &d); err != nil {
			return fmt.Errorf("decode discovery %q: %w", k, err)
		}
		d.Status = store.StatusInterrupted
		d.Error = &store.VerifyError{
			Class:      "cancelled",
			Message:    "switchboard stopped while this verification was running",
			Suggestion: "Verify again.",
		}
		updates = append(updates, d)
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
		mark := db.write(func(tx *bbolt.Tx) error { return tx.Bucket(bucketMeta).Delete(keyOpen) })
		if mark != nil {
			mark = fmt.Errorf("store: mark %s closed (its next open will check it): %w", db.path, mark)
		}
		if mark == nil && !db.damaged.Load() {
			// Sealed while this process still holds the lock, so
			// nothing writes the file under the reading. A seal that
			// could not be written costs the next open a full check,
			// nothing else; a file found damaged is not sealed.
			var key []byte
			if k := db.sealKey.Load(); k != nil {
				key = *k
			}
			writeSeal(db.path, key)
		}
		db.closeErr = errors.Join(mark, db.bolt.Close())
		db.claim.release()
	})
	return db.closeErr
}

// Subscribe calls fn with every change once it committed, on the
// goroutine that made it (see store.Changes).
func (db *DB) Subscribe(fn func(store.Change)) (cancel func()) { return db.subs.Subscribe(fn) }

// Path returns the file the store was opened from.
func (db *DB) Path() string { return db.path }

// view runs fn in a read-only transaction, as bbolt's View does, except
// that damage bbolt trips over — a page that is not what the file's tree
// says it is, a page beyond the end of the file — is an ErrDamaged error
// saying to restore a backup, not a crash (see catchDamage). Open checks
// a file in full unless its seal vouches for it, and a seal is only as
// good as the file it was written for: every transaction of the store
// goes through view or write.
func (db *DB) view(fn func(tx *bbolt.Tx) error) error {
	return db.noteDamage(catchDamage(db.path, func() error { return db.bolt.View(fn) }))
}

// write is view for a read-write transaction (bbolt's Update).
func (db *DB) write(fn func(tx *bbolt.Tx) error) error {
	return db.noteDamage(catchDamage(db.path, func() error { return db.bolt.Update(fn) }))
}

// noteDamage returns a transaction's err, remembering if it found the file
// damaged: Close then leaves the file unsealed, so that the next Open
// checks it in full and refuses it, naming it, rather than open it again
// for every read to fail.
func (db *DB) noteDamage(err error) error {
	if errors.Is(err, store.ErrDamaged) {
		db.damaged.Store(true)
	}
	return err
}

// update runs fn in one read-write transaction and, only if it committed,
// announces the change. An error of fn is returned as it is; a failure to
// commit (the file could not be written) comes as a *writeError.
func (db *DB) update(ctx context.Context, change store.Change, fn func(tx *bbolt.Tx) error) error {
	return db.updateMany(ctx, func(tx *bbolt.Tx) ([]store.Change, error) {
		return []store.Change{change}, fn(tx)
	})
}

// updateMany is update for a transaction that makes several changes, which
// fn returns, and announces them in order.
func (db *DB) updateMany(ctx context.Context, fn func(tx *bbolt.Tx) ([]store.Change, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rev, changes, err := db.commit(fn)
	if err != nil {
		return err
	}
	for i := range changes {
		changes[i].Revision = db.revisionString(rev)
	}
	db.subs.Notify(changes)
	db.unsaved.kick()
	return nil
}

// commit runs fn and advances the revision in one read-write transaction,
// and notes the revision once it committed, holding revMu throughout (see
// DB.revMu) and releasing it however the transaction ends, a panic
// included. It returns the revision and fn's changes.
func (db *DB) commit(fn func(tx *bbolt.Tx) ([]store.Change, error)) (rev uint64, changes []store.Change, err error) {
	var (
		written  bool // fn is done: what fails from here on is the write
		writeErr error
	)
	db.revMu.Lock()
	defer db.revMu.Unlock()
	err = db.write(func(tx *bbolt.Tx) error {
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
	switch {
	case err == nil:
		db.noteRevision(rev)
	case written && !errors.Is(err, store.ErrDamaged):
		// Damage found while committing (bbolt reads pages to rebalance
		// the tree) is damage, not a file that could not be written.
		err = &writeError{path: db.path, err: err}
	}
	return rev, changes, err
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
func (db *DB) CreateServer(ctx context.Context, s store.Server) error {
	now := time.Now().UTC()
	s.CreatedAt, s.UpdatedAt = now, now
	s.LaunchConfirmed, s.ConfirmedLaunch = "", nil
	s.SavedConfigHash = s.ConfigHash()
	return db.update(ctx, store.Change{ServerID: s.ID, Created: true}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketServers)
		if b.Get([]byte(s.ID)) != nil {
			return store.ErrExists
		}
		if err := putJSON(b, []byte(s.ID), s); err != nil {
			return err
		}
		return putJSON(tx.Bucket(bucketDiscovery), []byte(s.ID), store.Discovery{ServerID: s.ID, Status: store.StatusNever})
	})
}

// UpdateServer replaces a stored server, keeping its creation time and
// launch confirmation (which no longer matches if the launch changed). It
// returns ErrNotFound if there is no server with s.ID. Tools, policies and
// the discovery record are kept; a changed ConfigHash shows as stale via
// the record's config hash.
func (db *DB) UpdateServer(ctx context.Context, s store.Server) error {
	return db.update(ctx, store.Change{ServerID: s.ID}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketServers)
		var old store.Server
		if err := getJSON(b, []byte(s.ID), &old); err != nil {
			return err
		}
		s.CreatedAt = old.CreatedAt
		s.UpdatedAt = time.Now().UTC()
		s.LaunchConfirmed, s.ConfirmedLaunch = old.LaunchConfirmed, old.ConfirmedLaunch
		if s.Preset == "" {
			s.Preset = old.Preset // a preset is changed, never unset
		}
		s.SavedConfigHash = s.ConfigHash()
		return putJSON(b, []byte(s.ID), s)
	})
}

// ConfirmLaunch records that a person saw and confirmed the server's
// launch configuration with the given LaunchHash, and what that launch
// was (store.Server.ConfirmedLaunch). It returns
// ErrLaunchChanged if the stored server's launch is no longer the one
// confirmed (it was edited in between), and ErrNotFound.
func (db *DB) ConfirmLaunch(ctx context.Context, id, launchHash, by string) error {
	return db.update(ctx, store.Change{ServerID: id}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketServers)
		var s store.Server
		if err := getJSON(b, []byte(id), &s); err != nil {
			return err
		}
		if s.LaunchHash() != launchHash {
			return store.ErrLaunchChanged
		}
		if s.LaunchConfirmed == launchHash && s.ConfirmedLaunch != nil {
			return nil
		}
		s.AcceptHeldArtifact()
		l := store.LaunchOf(s)
		l.ConfirmedBy, l.ConfirmedAt = by, time.Now().UTC()
		s.LaunchConfirmed, s.ConfirmedLaunch = s.LaunchHash(), &l
		return putJSON(b, []byte(id), s)
	})
}

// DeleteServer removes a server with its discovery record, tools and
// policies. It returns ErrNotFound if there is no such server.
func (db *DB) DeleteServer(ctx context.Context, id string) error {
	u := db.unsaved.get(id)
	err := db.update(ctx, store.Change{ServerID: id, Deleted: true}, func(tx *bbolt.Tx) error {
		key := []byte(id)
		b := tx.Bucket(bucketServers)
		if b.Get(key) == nil {
			return store.ErrNotFound
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
func (db *DB) Server(ctx context.Context, id string) (store.Server, error) {
	var s store.Server
	err := db.view(func(tx *bbolt.Tx) error {
		return getJSON(tx.Bucket(bucketServers), []byte(id), &s)
	})
	return s, err
}

// Summary returns a server and its discovery record, or ErrNotFound.
func (db *DB) Summary(ctx context.Context, id string) (store.Summary, error) {
	var sum store.Summary
	err := db.view(func(tx *bbolt.Tx) error {
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
func (db *DB) Summaries(ctx context.Context) ([]store.Summary, error) {
	out := []store.Summary{}
	_, err := db.eachServer(func(_ *bbolt.Tx, _ []byte, sum *store.Summary) error {
		out = append(out, *sum)
		return nil
	})
	return out, err
}

func readSummary(tx *bbolt.Tx, key []byte) (store.Summary, error) {
	var sum store.Summary
	if err := getJSON(tx.Bucket(bucketServers), key, &sum.Server); err != nil {
		return sum, err
	}
	sum.Discovery = store.Discovery{ServerID: string(key), Status: store.StatusNever}
	if err := getJSON(tx.Bucket(bucketDiscovery), key, &sum.Discovery); err != nil && !errors.Is(err, store.ErrNotFound) {
		return sum, err
	}
	return sum, nil
}

// MarkRunning records that a verification job started for the server.
// It returns ErrNotFound if the server is gone.
func (db *DB) MarkRunning(ctx context.Context, id, jobID string, at time.Time) error {
	return db.updateDiscovery(ctx, id, "", store.Change{ServerID: id}, func(_ *bbolt.Tx, _ store.Server, d *store.Discovery) error {
		d.Status = store.StatusRunning
		d.JobID = jobID
		d.LastAttemptAt = at.UTC()
		return nil
	})
}

// AddLateWarnings appends warnings that arrived after a verification's
// result was recorded (processes found while its server was stopped) to
// the discovery record, if the record is still that job's; otherwise it
// returns ErrOtherJob and changes nothing.
func (db *DB) AddLateWarnings(ctx context.Context, id, jobID string, warnings []string) error {
	return db.updateDiscovery(ctx, id, "", store.Change{ServerID: id}, func(_ *bbolt.Tx, _ store.Server, d *store.Discovery) error {
		if d.JobID != jobID {
			return store.ErrOtherJob
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
func (db *DB) RecordSuccess(ctx context.Context, id string, v store.Verification) error {
	var discarded bool
	err := db.updateDiscovery(ctx, id, v.JobID, store.Change{ServerID: id, Tools: true, History: true}, func(tx *bbolt.Tx, s store.Server, d *store.Discovery) error {
		if v.Outdated(s) {
			discarded = true
			return appendHistory(tx, id, store.Discard(d, v.JobID, v.Trigger, v.StartedAt, v.FinishedAt))
		}
		known, err := readToolMap(tx, []byte(id))
		if err != nil {
			return err
		}
		m := store.MergeTools(s, known, v.Tools, v.FinishedAt)
		if err := writeMerged(tx, id, m); err != nil {
			return err
		}
		listedChanged, err := writeListed(tx, s, v)
		if err != nil {
			return err
		}
		entry := store.ApplySuccess(d, id, v, m)
		d.Changed += listedChanged
		return appendHistory(tx, id, entry)
	})
	if err == nil && discarded {
		return store.ErrConfigChanged
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
func (db *DB) RecordFailure(ctx context.Context, id string, f store.Failure) error {
	var discarded bool
	var stored string // the job of the record as stored
	err := db.updateDiscovery(ctx, id, f.JobID, store.Change{ServerID: id, History: true}, func(tx *bbolt.Tx, s store.Server, d *store.Discovery) error {
		stored = d.JobID
		entry := store.ApplyFailure(s, d, f)
		discarded = entry.Outcome == store.OutcomeDiscarded
		return appendHistory(tx, id, entry)
	})
	var we *writeError
	if errors.As(err, &we) {
		db.keepUnsaved(id, &unsaved{f: f, stored: stored})
	}
	if err == nil && discarded {
		return store.ErrConfigChanged
	}
	return err
}

// updateDiscovery reads the server and its record, lets fn change the
// record, and writes it back, all in one transaction. A failure of the
// server not written yet (see RecordFailure) is written first, unless it
// is of job, whose outcome fn records.
func (db *DB) updateDiscovery(ctx context.Context, id, job string, change store.Change, fn func(tx *bbolt.Tx, s store.Server, d *store.Discovery) error) error {
	u := db.unsaved.get(id)
	err := db.updateMany(ctx, func(tx *bbolt.Tx) ([]store.Change, error) {
		sum, err := readSummary(tx, []byte(id))
		if err != nil {
			return nil, err
		}
		d := sum.Discovery
		if u != nil && u.f.JobID != job && u.applies(d) {
			if err := appendHistory(tx, id, store.ApplyFailure(sum.Server, &d, u.f)); err != nil {
				return nil, err
			}
			change.History = true
		}
		if err := fn(tx, sum.Server, &d); err != nil {
			return nil, err
		}
		return []store.Change{change}, putJSON(tx.Bucket(bucketDiscovery), []byte(id), d)
	})
	if u != nil && err == nil {
		db.unsaved.forget(id, u)
	}
	return err
}

// readToolMap reads everything kept about a server's tools, by name, for
// store.MergeTools.
func readToolMap(tx *bbolt.Tx, key []byte) (map[string]store.ToolEntry, error) {
	known := map[string]store.ToolEntry{}
	err := eachTool(tx, key, func(e store.ToolEntry) error {
		known[e.Name] = e
		return nil
	})
	return known, err
}

// writeMerged writes what store.MergeTools decided: the tools, the first
// policies with their approved definitions, and the agent names.
func writeMerged(tx *bbolt.Tx, id string, m store.Merged) error {
	key := []byte(id)
	tb, err := tx.Bucket(bucketTools).CreateBucketIfNotExists(key)
	if err != nil {
		return err
	}
	pb, err := tx.Bucket(bucketPolicies).CreateBucketIfNotExists(key)
	if err != nil {
		return err
	}
	for _, t := range m.Tools {
		if p, ok := m.NewPolicies[t.Name]; ok {
			if err := putJSON(pb, []byte(t.Name), p); err != nil {
				return err
			}
			if err := putApproved(tx, t); err != nil {
				return err
			}
		}
		if err := recordAgentName(tx, &t); err != nil {
			return err
		}
		if err := putTool(tx, key, tb, t); err != nil {
			return err
		}
	}
	return nil
}

// Tools returns the server's tools (including missing ones) with their
// policies, ordered by name. It returns ErrNotFound if the server does not
// exist, and an empty slice if it was never verified.
func (db *DB) Tools(ctx context.Context, id string) ([]store.ToolEntry, error) {
	var out []store.ToolEntry
	err := db.view(func(tx *bbolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return store.ErrNotFound
		}
		var err error
		out, err = readTools(tx, []byte(id))
		return err
	})
	return out, err
}

// AllTools returns every server's tools with their policies, grouped by
// server id in id order, tools ordered by name.
func (db *DB) AllTools(ctx context.Context) ([]store.ToolEntry, error) {
	out := []store.ToolEntry{}
	_, err := db.Catalog(ctx, func(_ *store.Summary, e store.ToolEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// Catalog calls fn with every server's tools and their policies, in
// AllTools' order, each with its server and discovery record, in one
// read transaction, and returns the revision (see Revision) they were
// read at. Unlike AllTools it holds one tool at a time, so a whole
// catalog can be rendered without decoding all of it into memory at
// once. An error from fn stops the walk and is returned.
func (db *DB) Catalog(ctx context.Context, fn func(*store.Summary, store.ToolEntry) error) (string, error) {
	return db.eachServer(func(tx *bbolt.Tx, k []byte, sum *store.Summary) error {
		return eachTool(tx, k, func(e store.ToolEntry) error { return fn(sum, e) })
	})
}

// eachServer calls fn with every server, in id order, with its key and
// its summary, in one read transaction, and returns the revision it read.
// The pages it read leave the process's resident memory after (see
// releaseScanned): what it reads, every server (and often every tool),
// is kept by its callers in a form of their own, and its records are
// scattered over the file, each page fault mapping its neighbours too.
func (db *DB) eachServer(fn func(tx *bbolt.Tx, k []byte, sum *store.Summary) error) (string, error) {
	var rev string
	err := db.view(func(tx *bbolt.Tx) error {
		defer releaseScanned(db.bolt, tx)
		rev = db.revisionString(readRevision(tx))
		return tx.Bucket(bucketServers).ForEach(func(k, _ []byte) error {
			sum, err := readSummary(tx, k)
			if err != nil {
				return err
			}
			db.unsaved.overlay(&sum)
			return fn(tx, k, &sum)
		})
	})
	return rev, err
}

func readTools(tx *bbolt.Tx, key []byte) ([]store.ToolEntry, error) {
	out := []store.ToolEntry{}
	err := eachTool(tx, key, func(e store.ToolEntry) error {
		out = append(out, e)
		return nil
	})
	return out, err
}

// eachTool decodes one server's tools, with their policies, one at a time.
func eachTool(tx *bbolt.Tx, key []byte, fn func(store.ToolEntry) error) error {
	tb := tx.Bucket(bucketTools).Bucket(key)
	if tb == nil {
		return nil
	}
	pb := tx.Bucket(bucketPolicies).Bucket(key)
	return tb.ForEach(func(k, v []byte) error {
		var e store.ToolEntry
		if err := json.Unmarshal(v, &e.Tool); err != nil {
			return fmt.Errorf("decode tool %q: %w", k, err)
		}
		if pb != nil {
			if err := getJSON(pb, k, &e.Policy); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		e.Effective = store.EffectivePolicy(e.Tool, e.Policy)
		return fn(e)
	})
}

// SetPolicy records a person's policy for one tool (see
// store.ApplyPolicy). It returns ErrNotFound or ErrToolNotFound, and the
// updated entry.
func (db *DB) SetPolicy(ctx context.Context, ref store.ToolRef, p store.Policy, by string) (store.ToolEntry, error) {
	out, err := db.SetPolicies(ctx, ref.ServerID, []store.PolicyChange{{Tool: ref.Tool, Policy: p}}, by)
	if err != nil {
		return store.ToolEntry{}, err
	}
	return out[0], nil
}

// SetPolicies records policies for several tools of one server in one
// transaction (see store.ApplyPolicy).
func (db *DB) SetPolicies(ctx context.Context, id string, changes []store.PolicyChange, by string) ([]store.ToolEntry, error) {
	out := make([]store.ToolEntry, 0, len(changes))
	err := db.update(ctx, store.Change{ServerID: id, Tools: true}, func(tx *bbolt.Tx) error {
		out = out[:0]
		pb, err := tx.Bucket(bucketPolicies).CreateBucketIfNotExists([]byte(id))
		if err != nil {
			return err
		}
		now := time.Now()
		for _, c := range changes {
			e, err := readTool(tx, store.ToolRef{ServerID: id, Tool: c.Tool})
			if err != nil {
				return err
			}
			var first bool
			if e, first = store.ApplyPolicy(e, c.Policy, c.Reason, by, now); first {
				if err := putApproved(tx, e.Tool); err != nil {
					return err
				}
			}
			if err := putJSON(pb, []byte(c.Tool), e.Policy); err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// putJSON stores v as JSON under key.
func putJSON(b *bbolt.Bucket, key []byte, v any) error {
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
func getJSON(b *bbolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return store.ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %q: %w", key, err)
	}
	return nil
}

// DB is a whole store backend, and can back itself up.
var (
	_ store.Store    = (*DB)(nil)
	_ store.Backuper = (*DB)(nil)
)

// RecordArtifact records what a verification of the server really ran.
func (db *DB) RecordArtifact(ctx context.Context, id, artifact string) error {
	var held bool
	err := db.update(ctx, store.Change{ServerID: id}, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketServers)
		var s store.Server
		if err := getJSON(b, []byte(id), &s); err != nil {
			return err
		}
		var changed bool
		if changed, held = store.ApplyArtifact(&s, artifact); !changed {
			return nil
		}
		return putJSON(b, []byte(id), s)
	})
	if err == nil && held {
		return store.ErrArtifactHeld
	}
	return err
}

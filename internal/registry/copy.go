package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	v0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"

	"github.com/switchboard-dev/switchboard/store"
)

// DefaultEvery is how often a registry's copy is brought up to date.
const DefaultEvery = time.Hour

// Bounds of a copy: pages of pageSize, at most maxEntries versions per
// registry, each server.json at most maxServerJSON bytes once decoded
// and encoded again (unknown fields dropped).
const (
	pageSize      = 100
	maxEntries    = 50000
	maxServerJSON = 64 << 10
	// maxPullBytes bounds the server.json documents one pull keeps, and
	// maxPages the pages it reads (entries left out count too): a
	// registry that pages forever, or sends huge entries, ends the pull.
	maxPullBytes = 256 << 20
	maxPages     = maxEntries/pageSize + 10
)

// namePattern is server.json's name: reverse-DNS namespace/name.
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

// Copies keeps the copy of each registry in the store, pulls it in the
// background (Run), and answers searches from it (Search).
type Copies struct {
	st         store.RegistryCopies
	registries []string
	clients    map[string]*Client
	every      time.Duration
	log        *slog.Logger
	now        func() time.Time

	mu    sync.Mutex
	cache map[string]*decoded      // by registry
	pulls map[string]chan struct{} // each registry's pull, one at a time
}

// decoded is a registry's copy as searches read it: immutable once made.
type decoded struct {
	at      time.Time // when it was read from the store
	pull    store.RegistryPull
	servers []Listed // by name
	// entries are the versions, by store.RegistryEntryKey.
	entries map[string]store.RegistryEntry
}

// Listed is one server of a registry: its newest version's server.json,
// and every version the copy holds.
type Listed struct {
	Registry string
	Server   v0.ServerJSON
	Status   string // of the newest version
	Versions []string
	// Latest is the registry's latest version (the newest one copied if
	// it marks none).
	Latest string
	// key is what a search matches, lower case.
	key string
}

// NewCopies keeps the copies of registries (the official one if none)
// in st, each brought up to date every every (DefaultEvery if zero).
func NewCopies(st store.RegistryCopies, registries []string, every time.Duration, log *slog.Logger) *Copies {
	if len(registries) == 0 {
		registries = []string{Official}
	}
	if every <= 0 {
		every = DefaultEvery
	}
	c := &Copies{st: st, every: every, log: log, now: time.Now, clients: map[string]*Client{}, cache: map[string]*decoded{}, pulls: map[string]chan struct{}{}}
	for _, r := range registries {
		r = strings.TrimRight(r, "/")
		if _, dup := c.clients[r]; dup {
			continue
		}
		c.registries = append(c.registries, r)
		c.clients[r] = NewClient(r)
		c.pulls[r] = make(chan struct{}, 1)
	}
	return c
}

// Registries are the registries' URLs, as configured.
func (c *Copies) Registries() []string { return slices.Clone(c.registries) }

// Client is the client of one of the registries (nil if it is not one).
func (c *Copies) Client(registry string) *Client { return c.clients[registry] }

// Run brings each copy up to date when it is older than every (at once
// if it was never pulled), until ctx ends.
func (c *Copies) Run(ctx context.Context) {
	for {
		next := c.now().Add(c.every)
		for _, r := range c.registries {
			_, pull, err := c.st.RegistryCopy(ctx, r)
			if err != nil {
				c.log.Warn("read a registry's copy", "registry", r, "err", err)
				continue
			}
			due := pull.At.Add(c.every)
			if pull.Full && c.now().Before(due) { // another replica, or an earlier run, pulled it
				next = minTime(next, due)
				continue
			}
			if err := c.Pull(ctx, r); err != nil && ctx.Err() == nil {
				c.log.Warn("pull a registry's servers (browsing shows the copy kept, with its age)", "registry", r, "err", err)
				next = minTime(next, c.now().Add(c.every/6)) // try again sooner
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// Pull brings the registry's copy up to date: every server updated since
// the last full pull (all of them the first time), page by page.
func (c *Copies) Pull(ctx context.Context, registry string) error {
	lock := c.pulls[registry]
	if lock == nil {
		return fmt.Errorf("%s is not one of Switchboard's registries", registry)
	}
	select { // one pull of a registry at a time; a caller gone stops waiting
	case lock <- struct{}{}:
		defer func() { <-lock }()
	case <-ctx.Done():
		return ctx.Err()
	}
	_, pull, err := c.st.RegistryCopy(ctx, registry)
	if err != nil {
		return err
	}
	started := c.now()
	params := ListParams{Limit: pageSize}
	if pull.Full {
		params.UpdatedSince = pull.At.Add(-time.Minute) // a margin for clocks
	}
	var entries []store.RegistryEntry
	skipped, size := 0, 0
	for pages := 0; ; pages++ {
		if pages >= maxPages {
			return fmt.Errorf("the registry gave over %d pages: refused", maxPages)
		}
		page, err := c.clients[registry].List(ctx, params)
		if err != nil {
			pull.TriedAt, pull.Error = started, err.Error()
			if perr := c.st.PutRegistryEntries(ctx, registry, nil, pull); perr != nil {
				c.log.Warn("record a failed pull", "registry", registry, "err", perr)
			}
			return err
		}
		for _, sr := range page.Servers {
			e, ok := entryOf(sr)
			if !ok {
				skipped++
				continue
			}
			size += len(e.Server)
			entries = append(entries, e)
		}
		if size > maxPullBytes {
			return fmt.Errorf("the registry's entries are over %d MiB: refused", maxPullBytes>>20)
		}
		if len(entries)+skipped > maxEntries {
			return fmt.Errorf("the registry lists over %d server versions: refused", maxEntries)
		}
		next := page.Metadata.NextCursor
		if next == "" || next == params.Cursor || len(page.Servers) == 0 {
			break
		}
		params.Cursor = next
	}
	if skipped > 0 {
		c.log.Warn("left out registry entries that break server.json's limits", "registry", registry, "entries", skipped)
	}
	if err := c.st.PutRegistryEntries(ctx, registry, entries, store.RegistryPull{At: started, Full: true}); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.cache, registry)
	c.mu.Unlock()
	c.log.Info("pulled a registry's servers", "registry", registry, "versions", len(entries), "since", params.UpdatedSince)
	return nil
}

// entryOf is a server version as the copy keeps it, if it is within
// server.json's limits: a name of the schema's pattern, at most 200
// bytes; a version, a description and a title within theirs.
func entryOf(sr v0.ServerResponse) (store.RegistryEntry, bool) {
	s := sr.Server
	if !namePattern.MatchString(s.Name) || len(s.Name) > 200 || s.Version == "" || len(s.Version) > 255 ||
		!utf8.ValidString(s.Description) || len(s.Description) > 1000 || len(s.Title) > 1000 {
		return store.RegistryEntry{}, false
	}
	doc, err := json.Marshal(s)
	if err != nil || len(doc) > maxServerJSON {
		return store.RegistryEntry{}, false
	}
	e := store.RegistryEntry{Name: s.Name, Version: s.Version, Status: string(model.StatusActive), Server: doc}
	if o := sr.Meta.Official; o != nil {
		e.Latest, e.UpdatedAt = o.IsLatest, o.UpdatedAt
		if o.Status != "" {
			e.Status = string(o.Status)
		}
	}
	return e, true
}

// decode reads the registry's copy (from the cache when it is at most
// 30 s old: another replica's pull shows within that).
func (c *Copies) decode(ctx context.Context, registry string) (*decoded, error) {
	c.mu.Lock()
	d := c.cache[registry]
	c.mu.Unlock()
	if d != nil && c.now().Sub(d.at) < 30*time.Second {
		return d, nil
	}
	entries, pull, err := c.st.RegistryCopy(ctx, registry)
	if err != nil {
		return nil, err
	}
	d = &decoded{at: c.now(), pull: pull, entries: make(map[string]store.RegistryEntry, len(entries))}
	type versions struct {
		entries []store.RegistryEntry
	}
	byName := map[string]*versions{}
	for _, e := range entries {
		d.entries[store.RegistryEntryKey(e.Name, e.Version)] = e
		if byName[e.Name] == nil {
			byName[e.Name] = &versions{}
		}
		byName[e.Name].entries = append(byName[e.Name].entries, e)
	}
	for _, vs := range byName {
		slices.SortFunc(vs.entries, func(a, b store.RegistryEntry) int { return compareVersions(a.Version, b.Version) })
		// The registry's latest, else the highest version; never one the
		// registry deleted (often for cause) while another is there.
		newest := vs.entries[len(vs.entries)-1]
		for _, e := range vs.entries {
			if e.Status != string(model.StatusDeleted) && (newest.Status == string(model.StatusDeleted) || compareVersions(e.Version, newest.Version) > 0) {
				newest = e
			}
		}
		for _, e := range vs.entries {
			if e.Latest && e.Status != string(model.StatusDeleted) {
				newest = e
			}
		}
		l := Listed{Registry: registry, Status: newest.Status, Latest: newest.Version}
		if err := json.Unmarshal(newest.Server, &l.Server); err != nil {
			continue
		}
		for _, e := range vs.entries {
			l.Versions = append(l.Versions, e.Version)
		}
		l.key = strings.ToLower(l.Server.Name + "\n" + l.Server.Title + "\n" + l.Server.Description)
		d.servers = append(d.servers, l)
	}
	slices.SortFunc(d.servers, func(a, b Listed) int { return strings.Compare(a.Server.Name, b.Server.Name) })
	c.mu.Lock()
	c.cache[registry] = d
	c.mu.Unlock()
	return d, nil
}

// CompareVersions orders versions: as semantic versions where both are
// (a pre-release below its release), else by dotted parts, numbers
// below words.
func CompareVersions(a, b string) int { return compareVersions(a, b) }

func compareVersions(a, b string) int {
	if x, ok := parseSemver(a); ok {
		if y, ok := parseSemver(b); ok {
			for i := range 3 {
				if x.n[i] != y.n[i] {
					return cmpInt(x.n[i], y.n[i])
				}
			}
			switch {
			case x.pre == "" && y.pre == "":
				return 0
			case x.pre == "":
				return 1
			case y.pre == "":
				return -1
			}
			return compareParts(strings.Split(x.pre, "."), strings.Split(y.pre, "."))
		}
	}
	return compareParts(strings.Split(a, "."), strings.Split(b, "."))
}

type semver struct {
	n   [3]int
	pre string
}

func parseSemver(v string) (semver, bool) {
	v, _, _ = strings.Cut(v, "+")
	core, pre, _ := strings.Cut(v, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return semver{}, false
	}
	var s semver
	for i, p := range parts {
		n, ok := atoiOK(p)
		if !ok {
			return semver{}, false
		}
		s.n[i] = n
	}
	s.pre = pre
	return s, true
}

// compareParts compares dotted parts: numbers by value, below words,
// words as text; a longer list after its prefix.
func compareParts(pa, pb []string) int {
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := atoiOK(pa[i])
		nb, eb := atoiOK(pb[i])
		switch {
		case ea && eb:
			if na != nb {
				return cmpInt(na, nb)
			}
		case ea:
			return -1
		case eb:
			return 1
		default:
			if c := strings.Compare(pa[i], pb[i]); c != 0 {
				return c
			}
		}
	}
	return cmpInt(len(pa), len(pb))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func atoiOK(s string) (int, bool) {
	n := 0
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, true
}

package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"

	"github.com/switchboard-dev/switchboard/store"
)

// Page is one page of a search of the registries.
type Page struct {
	Servers []Listed
	// NextCursor asks for the next page ("" at the end).
	NextCursor string
	// Copies is each registry's copy as the page read it: its last pull
	// (its age), or, for a registry never pulled yet, ReadThrough.
	Copies []CopyState
}

// CopyState is what a page says of one registry's copy.
type CopyState struct {
	Registry string
	Pull     store.RegistryPull
	// ReadThrough: there is no copy yet, and this page's servers of the
	// registry were read from it directly.
	ReadThrough bool
}

// ErrNoCopy is a search of a registry of which there is no copy yet and
// which cannot be reached: not an empty registry.
var ErrNoCopy = errors.New("there is no copy of the registry yet, and it cannot be reached now")

// Limits of a page of a search.
const (
	DefaultLimit = 30
	MaxLimit     = 100
)

// Search finds the servers of every registry whose name, title or
// description holds every word of query (all of them if it is empty),
// by name, limit at a time from the cursor a last page gave. A registry
// never pulled yet is read through (ErrNoCopy if it cannot be reached
// either), never shown as empty.
func (c *Copies) Search(ctx context.Context, query, cursor string, limit int) (Page, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	offset := 0
	if cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cursor, "o"))
		if err != nil || n < 0 || !strings.HasPrefix(cursor, "o") {
			return Page{}, fmt.Errorf("the cursor %q is not one a page gave", cursor)
		}
		offset = n
	}
	words := strings.Fields(strings.ToLower(query))
	var page Page
	var found []*Listed // each registry's in name order
	sorted := true
	for _, r := range c.registries {
		d, err := c.decode(ctx, r)
		if err != nil {
			return Page{}, err
		}
		state := CopyState{Registry: r, Pull: d.pull}
		if !d.pull.Full {
			// No copy yet: read through, the first page of it.
			listed, err := c.readThrough(ctx, r, query)
			if err != nil {
				return Page{}, fmt.Errorf("%w (%s: %v)", ErrNoCopy, r, err)
			}
			state.ReadThrough = true
			for i := range listed {
				found = append(found, &listed[i])
			}
			sorted = false
			page.Copies = append(page.Copies, state)
			continue
		}
		page.Copies = append(page.Copies, state)
		if len(found) > 0 {
			sorted = false // a second registry's follow the first's
		}
		for i := range d.servers {
			if matches(d.servers[i].key, words) {
				found = append(found, &d.servers[i])
			}
		}
	}
	if !sorted {
		slices.SortStableFunc(found, func(a, b *Listed) int { return strings.Compare(a.Server.Name, b.Server.Name) })
	}
	if offset > len(found) {
		offset = len(found)
	}
	end := min(offset+limit, len(found))
	for _, l := range found[offset:end] {
		page.Servers = append(page.Servers, *l)
	}
	if end < len(found) {
		page.NextCursor = "o" + strconv.Itoa(end)
	}
	return page, nil
}

func matches(key string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(key, w) {
			return false
		}
	}
	return true
}

// readThrough is the registry's latest versions matching query, read
// from it directly (one page).
func (c *Copies) readThrough(ctx context.Context, registry, query string) ([]Listed, error) {
	page, err := c.clients[registry].List(ctx, ListParams{Search: query, Limit: MaxLimit, Latest: true})
	if err != nil {
		return nil, err
	}
	var out []Listed
	for _, sr := range page.Servers {
		e, ok := entryOf(sr)
		if !ok {
			continue
		}
		out = append(out, Listed{Registry: registry, Server: sr.Server, Status: e.Status, Versions: []string{e.Version}, Latest: e.Version})
	}
	return out, nil
}

// Find is one server of a registry from its copy (read through without
// one), with every version the copy holds.
func (c *Copies) Find(ctx context.Context, registry, name string) (Listed, bool, error) {
	d, err := c.decode(ctx, registry)
	if err != nil {
		return Listed{}, false, err
	}
	if i, ok := slices.BinarySearchFunc(d.servers, name, func(l Listed, n string) int { return strings.Compare(l.Server.Name, n) }); ok {
		return d.servers[i], true, nil
	}
	return Listed{}, false, nil
}

// Version is the server.json of one version ("latest", or exact) of the
// server of the registry, and its status: from the copy, else read from
// the registry. ErrDeleted for a version the registry deleted.
func (c *Copies) Version(ctx context.Context, registry, name, version string) (v0.ServerJSON, error) {
	d, err := c.decode(ctx, registry)
	if err != nil {
		return v0.ServerJSON{}, err
	}
	if version == "latest" {
		if i, ok := slices.BinarySearchFunc(d.servers, name, func(l Listed, n string) int { return strings.Compare(l.Server.Name, n) }); ok {
			if d.servers[i].Status == string(model.StatusDeleted) {
				return v0.ServerJSON{}, ErrDeleted
			}
			return d.servers[i].Server, nil
		}
	} else if e, ok := d.entries[store.RegistryEntryKey(name, version)]; ok {
		if e.Status == string(model.StatusDeleted) {
			return v0.ServerJSON{}, ErrDeleted
		}
		var s v0.ServerJSON
		if err := json.Unmarshal(e.Server, &s); err != nil {
			return v0.ServerJSON{}, fmt.Errorf("%w: the copy's %s@%s: %v", store.ErrDamaged, name, version, err)
		}
		return s, nil
	}
	sr, err := c.clients[registry].Version(ctx, name, version) // not (yet) in the copy
	if err != nil {
		return v0.ServerJSON{}, err
	}
	e, ok := entryOf(sr)
	switch {
	case !ok:
		return v0.ServerJSON{}, fmt.Errorf("the registry's %s@%s breaks server.json's limits", name, version)
	case e.Status == string(model.StatusDeleted):
		return v0.ServerJSON{}, ErrDeleted
	}
	return sr.Server, nil
}

// ErrDeleted is a version the registry deleted: it is not added, nor
// updated to.
var ErrDeleted = errors.New("the registry deleted this version")

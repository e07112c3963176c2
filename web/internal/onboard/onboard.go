// Package onboard takes a person from an empty list to verified servers
// in a few steps: the client configs found on this machine, imported all
// at once, and the launches that wait for a person's confirmation,
// confirmed together on one page (docs/architecture.md "Security defaults": each is
// shown in full first).
package onboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// Key names a found file in a form: stable while the file is there, and
// never a path the server would read.
func Key(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:8])
}

// Reader reads a found file (bounded); its error is shown to the person.
type Reader func(path string) ([]byte, error)

// Scan reads each found file and counts the servers it lists, as the
// empty servers list shows them.
func Scan(locs []clientconfig.Location, read Reader) []views.FoundConfig {
	out := make([]views.FoundConfig, 0, len(locs))
	for _, l := range locs {
		f := views.FoundConfig{Client: l.Client, Path: l.Path}
		file, err := parse(l, read)
		if err != nil {
			f.Problem = err.Error()
		} else {
			f.Servers = len(file.Servers)
		}
		out = append(out, f)
	}
	return out
}

func parse(l clientconfig.Location, read Reader) (*clientconfig.File, error) {
	data, err := read(l.Path)
	if err != nil {
		return nil, err
	}
	return clientconfig.Parse(l.Format, data)
}

// Store is what importing needs of the store.
type Store interface {
	Summaries(ctx context.Context) ([]store.Summary, error)
	CreateServer(ctx context.Context, s store.Server) error
	UpdateServer(ctx context.Context, s store.Server) error
}

// Report is what Import all did, file by file, and the ids of the
// servers it added.
type Report struct {
	views.ImportReport
	Servers []string
}

// ImportAll imports every entry of every file in turn, each planned as
// the Import page plans it after the files before it were imported, with
// the plan's default choices: new servers are added; an entry whose id a
// stored server has (the same, or a different one, which only the
// person's explicit choice on the Import page overwrites) and an entry
// that cannot be imported are skipped, with the reason.
func ImportAll(ctx context.Context, st Store, locs []clientconfig.Location, read Reader) Report {
	rep := Report{Servers: []string{}}
	for _, l := range locs {
		fr := views.ImportedFile{Client: l.Client, Path: l.Path}
		data, err := read(l.Path)
		var plan serverconfig.ImportPlan
		if err == nil {
			plan, err = serverconfig.PlanImport(ctx, st, l.Format, data)
		}
		if err != nil {
			fr.Problem = err.Error()
			rep.Files = append(rep.Files, fr)
			continue
		}
		res := serverconfig.ApplyImport(ctx, st, plan, nil)
		rep.Added += res.Added
		rep.Failed += res.Failed
		rep.Skipped += res.Skipped + res.Invalid
		rep.Servers = append(rep.Servers, res.Servers...)
		fr.Lines = append(fr.Lines, res.Lines...)
		for i, r := range plan.Rows {
			if why := skipReason(r); why != "" && i < len(fr.Lines) {
				fr.Lines[i] += ": " + why
			}
		}
		rep.Files = append(rep.Files, fr)
	}
	return rep
}

// skipReason says why Import all skips a row it does not add.
func skipReason(r serverconfig.ImportRow) string {
	switch r.Action {
	case serverconfig.ImportSame:
		return "the same server is already there as " + r.ID
	case serverconfig.ImportUpdate:
		fields := make([]string, 0, len(r.Diff))
		for _, d := range r.Diff {
			fields = append(fields, d.Field)
		}
		return fmt.Sprintf("a different server %s is already there (%s differ); to replace it or add this one beside it, read this file on the Import page",
			r.ID, strings.Join(fields, ", "))
	}
	return ""
}

// Pending lists the enabled servers whose current launch no person has
// confirmed, in the store's order: all of them if ids is nil, else those
// of ids.
func Pending(sums []store.Summary, ids []string) []store.Server {
	var out []store.Server
	for _, sum := range sums {
		srv := sum.Server
		if srv.Enabled && !srv.LaunchConfirmedNow() && (ids == nil || slices.Contains(ids, srv.ID)) {
			out = append(out, srv)
		}
	}
	return out
}

// Check compares the launches a person confirmed (launch hash by server
// id, as the page showed them) with the servers' current ones. It
// returns the servers to confirm, and the ids whose launch changed since
// the page was shown (or that are gone, or need no confirmation any
// more): none of those is confirmed.
func Check(sums []store.Summary, confirmed map[string]string) (ok []store.Server, changed []string) {
	byID := map[string]store.Server{}
	for _, sum := range sums {
		byID[sum.Server.ID] = sum.Server
	}
	for _, id := range sortedIDs(confirmed) {
		srv, found := byID[id]
		switch {
		case !found || srv.LaunchHash() != confirmed[id]:
			changed = append(changed, id)
		case !srv.LaunchConfirmedNow():
			ok = append(ok, srv)
		}
	}
	return ok, changed
}

func sortedIDs(m map[string]string) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

package serverconfig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
	"github.com/switchboard-dev/switchboard/store"
)

// Importing servers from the configs of other MCP clients: a plan (the
// dry run every import starts with), then the person's choices applied.
// The plan is computed afresh from the same text when it is applied, so
// what is applied is what was shown, unless the store changed in between
// (then the changed rows say so).

// Import actions: what a row of the plan would do.
const (
	ImportAdd    = "add"    // a new server
	ImportUpdate = "update" // a server with the same id exists and differs
	ImportSame   = "same"   // a server with the same id exists and is identical: skipped
	ImportError  = "error"  // the entry cannot be imported as it is
)

// Choices a person makes per row.
const (
	ChoiceAdd    = "add"    // add it (an ImportAdd row)
	ChoiceUpdate = "update" // overwrite the existing server (an ImportUpdate row)
	ChoiceNew    = "new"    // add it as a new server, under a free id (an ImportUpdate row)
	ChoiceSkip   = "skip"
)

// ImportRow is one entry of an import plan.
type ImportRow struct {
	Name   string `json:"name"` // the entry's name in the file
	ID     string `json:"id"`   // the id Switchboard uses for it
	Action string `json:"action"`
	// Choice is what applying does by default: add for new servers,
	// skip for everything else (an overwrite is always the person's
	// explicit choice).
	Choice string `json:"choice"`
	// NewID is the free id ChoiceNew would use.
	NewID   string      `json:"new_id,omitempty"`
	Line    int         `json:"line"`
	Col     int         `json:"column"`
	Diff    []FieldDiff `json:"diff,omitempty"`    // for ImportUpdate
	Secrets []string    `json:"secrets,omitempty"` // env and header names whose values look like secrets
	Refs    []string    `json:"refs,omitempty"`    // "env.KEY: ${input:…}": references kept as written
	Notes   []string    `json:"notes,omitempty"`   // anything else worth knowing
	Errors  []string    `json:"errors,omitempty"`  // for ImportError, one per problem
	Target  string      `json:"target,omitempty"`  // the command line or URL
	// Fingerprint changes when what the row would do changes: a form
	// posts it back, and a row whose fingerprint moved since the preview
	// is not applied (see ApplyImport).
	Fingerprint string `json:"fingerprint"`

	server store.Server // what would be stored
	asNew  store.Server // what ChoiceNew would store
}

// FieldDiff is one field an update would change; secret values show as
// SecretMask.
type FieldDiff struct {
	Field string `json:"field"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// ImportPlan is the dry run of one import.
type ImportPlan struct {
	Format   string
	Rows     []ImportRow
	Warnings []string
}

// Counts says how many rows have each action.
func (p ImportPlan) Counts() map[string]int {
	out := map[string]int{}
	for _, r := range p.Rows {
		out[r.Action]++
	}
	return out
}

// planStore is what planning and applying an import need of the store.
type planStore interface {
	Summaries(ctx context.Context) ([]store.Summary, error)
	CreateServer(ctx context.Context, s store.Server) error
	UpdateServer(ctx context.Context, s store.Server) error
}

// PlanImport parses text (format "" detects it) and compares each entry
// with the stored servers. A text that cannot be parsed at all is a
// *clientconfig.SyntaxError or another error; a bad entry is an
// ImportError row and the others are planned as usual.
func PlanImport(ctx context.Context, st planStore, format string, text []byte) (ImportPlan, error) {
	f, err := clientconfig.Parse(format, text)
	if err != nil {
		return ImportPlan{}, err
	}
	if n := len(f.Servers) + len(f.Problems); n > MaxImportEntries {
		return ImportPlan{}, fmt.Errorf("the config has %d servers; at most %d are imported at once", n, MaxImportEntries)
	}
	sums, err := st.Summaries(ctx)
	if err != nil {
		return ImportPlan{}, err
	}
	existing := map[string]store.Server{}
	for _, s := range sums {
		existing[s.Server.ID] = s.Server
	}
	plan := ImportPlan{Format: f.Format, Warnings: f.Warnings}
	for _, p := range f.Problems {
		plan.Rows = append(plan.Rows, ImportRow{Name: p.Name, Action: ImportError, Choice: ChoiceSkip,
			Line: p.Pos.Line, Col: p.Pos.Col, Errors: []string{p.Message}})
	}
	// First every entry's own id (an id a stored server has makes the
	// entry that server's update), then the new ids "add as new" would
	// use, so that those never push an entry off its own id.
	used := map[string]bool{}
	var updates []int
	for _, cs := range f.Servers {
		row := ImportRow{Name: cs.Name, Line: cs.Pos.Line, Col: cs.Pos.Col}
		id := uniqueID(slugify(cs.Name), used)
		used[id] = true
		row.ID = id
		old, exists := existing[id]
		var oldPtr *store.Server
		if exists {
			oldPtr = &old
		}
		srv, notes, errs := importServer(id, cs, oldPtr)
		row.Notes = notes
		row.Secrets = secretLooking(cs)
		for _, r := range cs.Refs {
			row.Refs = append(row.Refs, r.Field+": "+r.Ref)
		}
		row.server, row.Target = srv, Target(srv)
		switch {
		case len(errs) > 0:
			row.Action, row.Choice = ImportError, ChoiceSkip
			for _, k := range sortedKeys(errs) {
				row.Errors = append(row.Errors, k+": "+errs[k])
			}
		case !exists:
			row.Action, row.Choice = ImportAdd, ChoiceAdd
		default:
			row.Diff = diffServers(old, srv)
			row.Action, row.Choice = ImportSame, ChoiceSkip
			if len(row.Diff) > 0 {
				row.Action = ImportUpdate
				row.asNew, _, _ = importServer(id, cs, nil) // a server of its own
				updates = append(updates, len(plan.Rows))
			}
		}
		row.Fingerprint = fingerprint(row, old)
		plan.Rows = append(plan.Rows, row)
	}
	taken := maps.Clone(used)
	for id := range existing {
		taken[id] = true
	}
	for _, i := range updates {
		r := &plan.Rows[i]
		r.NewID = uniqueID(r.ID, taken)
		taken[r.NewID] = true
		r.asNew.ID = r.NewID
		r.Fingerprint = fingerprint(*r, existing[r.ID])
	}
	sort.SliceStable(plan.Rows, func(i, j int) bool {
		a, b := plan.Rows[i], plan.Rows[j]
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	return plan, nil
}

// MaxImportEntries bounds the entries of one import.
const MaxImportEntries = 500

// fingerprint hashes what a row would do: its action and ids, the server
// it would store, and the stored server it would change.
func fingerprint(r ImportRow, old store.Server) string {
	var h fieldHasher
	h.add(r.Name, strconv.Itoa(r.Line), strconv.Itoa(r.Col), r.Action, r.ID, r.NewID, r.server.ConfigHash(),
		strconv.FormatBool(r.server.Enabled), old.ID, old.ConfigHash(), strconv.FormatBool(old.Enabled))
	return h.sum()
}

// ImportResult is what applying an import did, a line per row.
type ImportResult struct {
	Added   int      `json:"added"`
	Updated int      `json:"updated"`
	Skipped int      `json:"skipped"`
	Invalid int      `json:"invalid"` // rows that cannot be imported
	Failed  int      `json:"failed"`  // rows the store refused
	Lines   []string `json:"lines"`
	// Servers are the ids of the servers added or updated, in row order:
	// each waits for a person to confirm its launch.
	Servers []string `json:"servers"`
}

// ApplyImport applies the plan with the person's choices, by row index
// (rows without one take their default Choice). Rows that cannot be
// imported count as Invalid. Each row is its own store change: one that
// fails (the id taken meanwhile) does not undo the others.
func ApplyImport(ctx context.Context, st planStore, plan ImportPlan, choices map[int]string) ImportResult {
	res := ImportResult{Servers: []string{}}
	for i, r := range plan.Rows {
		choice := r.Choice
		if c, ok := choices[i]; ok {
			choice = c
		}
		fail := func(err error) {
			res.Failed++
			res.Lines = append(res.Lines, fmt.Sprintf("%s: not imported: %v", r.Name, err))
		}
		switch {
		case r.Action == ImportError:
			res.Invalid++
			res.Lines = append(res.Lines, fmt.Sprintf("%s: cannot be imported: %s", r.Name, strings.Join(r.Errors, "; ")))
		case choice == ChoiceSkip || r.Action == ImportSame:
			res.Skipped++
			res.Lines = append(res.Lines, fmt.Sprintf("%s: skipped", r.Name))
		case choice == ChoiceAdd && r.Action == ImportAdd:
			if err := st.CreateServer(ctx, r.server); err != nil {
				fail(err)
				continue
			}
			res.Added++
			res.Servers = append(res.Servers, r.ID)
			res.Lines = append(res.Lines, fmt.Sprintf("%s: added as %s", r.Name, r.ID))
		case choice == ChoiceNew && r.Action == ImportUpdate:
			if err := st.CreateServer(ctx, r.asNew); err != nil {
				fail(err)
				continue
			}
			res.Added++
			res.Servers = append(res.Servers, r.NewID)
			res.Lines = append(res.Lines, fmt.Sprintf("%s: added as %s", r.Name, r.NewID))
		case choice == ChoiceUpdate && r.Action == ImportUpdate:
			if err := st.UpdateServer(ctx, r.server); err != nil {
				fail(err)
				continue
			}
			res.Updated++
			res.Servers = append(res.Servers, r.ID)
			res.Lines = append(res.Lines, fmt.Sprintf("%s: updated %s", r.Name, r.ID))
		default:
			fail(fmt.Errorf("%q is not a choice for a row that would %s", choice, r.Action))
		}
	}
	return res
}

// ChoicesByName turns choices by entry name (the API's and the command
// line's) into choices by row. A name that more than one row has is an
// error: the choice would be ambiguous.
func ChoicesByName(plan ImportPlan, byName map[string]string) (map[int]string, error) {
	out := map[int]string{}
	for name, c := range byName {
		found := -1
		for i, r := range plan.Rows {
			if r.Name != name || r.Action == ImportError {
				continue
			}
			if found >= 0 {
				return nil, fmt.Errorf("more than one entry is named %q; choose on the Import page", name)
			}
			found = i
		}
		if found < 0 {
			return nil, fmt.Errorf("no entry %q can be chosen for", name)
		}
		out[found] = c
	}
	return out, nil
}

// importServer builds the server an entry describes, validated as the
// add form validates. An existing server (old) keeps its display name,
// policy, limits and secrets that the entry only holds placeholders for.
func importServer(id string, cs clientconfig.Server, old *store.Server) (store.Server, []string, map[string]string) {
	in := Input{ID: id, Name: cs.Name, Transport: cs.Transport, Command: cs.Command, Args: cs.Args,
		Cwd: cs.Cwd, URL: cs.URL, Enabled: !cs.Disabled}
	var notes []string
	if cs.Disabled {
		notes = append(notes, "turned off in the client: imported disabled")
	}
	if old != nil {
		in.Name, in.DefaultPolicy = old.Name, string(old.DefaultPolicy)
		in.TimeoutMS, in.MemoryMB, in.TTLSeconds, in.AutoRefresh = SettingsText(*old)
	}
	if len(in.Name) > 100 {
		in.Name = strings.ToValidUTF8(in.Name[:100], "")
	}
	rows := func(m, oldm map[string]string, placeholder func(string) string) []KV {
		var out []KV
		for _, k := range sortedKeys(m) {
			v := m[k]
			if v == placeholder(k) || v == inputPlaceholder(id, k) {
				if _, ok := oldm[k]; ok {
					v = SecretMask // keep the stored value
				} else {
					notes = append(notes, fmt.Sprintf("%s holds Switchboard's placeholder: set its value before verifying", k))
				}
			}
			out = append(out, KV{k, v})
		}
		return out
	}
	var oldEnv, oldHeaders map[string]string
	if old != nil {
		oldEnv, oldHeaders = old.Env, old.Headers
		// Client configs cannot say how to sign in: an update keeps the
		// server's sign-in client.
		oc := old.OAuthSettings()
		in.OAuthClientID, in.OAuthScopes = oc.ClientID, oc.Scopes
	}
	in.Env = rows(cs.Env, oldEnv, envPlaceholder)
	in.Headers = rows(cs.Headers, oldHeaders, headerPlaceholder)
	if in.Transport == "" {
		in.Transport = store.TransportStdio
	}
	srv, errs := Validate(in, old)
	return srv, notes, errs
}

// diffServers lists the fields an import would change on old, secret
// values masked.
func diffServers(old, s store.Server) []FieldDiff {
	var out []FieldDiff
	add := func(field, a, b string) {
		if a != b {
			out = append(out, FieldDiff{field, a, b})
		}
	}
	add("transport", old.Transport, s.Transport)
	add("command", old.Command, s.Command)
	if !slices.Equal(old.Args, s.Args) {
		out = append(out, FieldDiff{"args", argsLine(old.Args), argsLine(s.Args)})
	}
	add("cwd", old.Cwd, s.Cwd)
	add("url", old.URL, s.URL)
	secrets := func(what string, a, b map[string]string) {
		for _, k := range unionKeys(a, b) {
			va, oka := a[k]
			vb, okb := b[k]
			switch {
			case oka && !okb:
				out = append(out, FieldDiff{what + "." + k, SecretMask, "(removed)"})
			case !oka && okb:
				out = append(out, FieldDiff{what + "." + k, "(none)", SecretMask})
			case va != vb:
				out = append(out, FieldDiff{what + "." + k, SecretMask, SecretMask + " (a new value)"})
			}
		}
	}
	secrets("env", old.Env, s.Env)
	secrets("headers", old.Headers, s.Headers)
	add("enabled", strconv.FormatBool(old.Enabled), strconv.FormatBool(s.Enabled))
	return out
}

// argsLine is arguments as a shell would take them.
func argsLine(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// fieldHasher hashes length-prefixed fields.
type fieldHasher struct{ h hash.Hash }

func (f *fieldHasher) add(fields ...string) {
	if f.h == nil {
		f.h = sha256.New()
	}
	for _, v := range fields {
		fmt.Fprintf(f.h, "%d:%s", len(v), v)
	}
}

func (f *fieldHasher) sum() string { return hex.EncodeToString(f.h.Sum(nil))[:16] }

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

var slugUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// slugify turns an entry's name into a server id: lower-case letters,
// digits and single dashes, at most 32 characters, starting with a letter
// or digit ("server" if nothing is left).
func slugify(name string) string {
	s := strings.Trim(slugUnsafe.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 32 {
		s = strings.TrimRight(s[:32], "-")
	}
	if s == "" || s == "new" {
		s = "server"
	}
	return s
}

// uniqueID is id, or id-2, id-3… (cut to fit 32 characters), the first
// that taken does not hold.
func uniqueID(id string, taken map[string]bool) string {
	if !taken[id] {
		return id
	}
	for n := 2; ; n++ {
		suffix := "-" + strconv.Itoa(n)
		base := id
		if len(base)+len(suffix) > 32 {
			base = strings.TrimRight(base[:32-len(suffix)], "-")
		}
		if c := base + suffix; !taken[c] {
			return c
		}
	}
}

// secretNames and secretValues spot values that look like credentials.
var (
	secretNames  = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|auth|credential|bearer|cookie|session|private|pat$)`)
	secretValues = regexp.MustCompile(`^(sk-|sk_|ghp_|gho_|github_pat_|xox[abpr]-|AKIA|glpat-|Bearer )|^[A-Za-z0-9+/_=.-]{32,}$`)
)

// secretLooking lists the env and header names of an entry whose names or
// values look like credentials. Every env and header value is stored as a
// secret (masked thereafter); these are the ones the dry run points out.
func secretLooking(cs clientconfig.Server) []string {
	var out []string
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{{"env.", cs.Env}, {"headers.", cs.Headers}} {
		for _, k := range sortedKeys(m.values) {
			v := m.values[k]
			if strings.HasPrefix(v, "${") {
				continue // a reference, not a value
			}
			if secretNames.MatchString(k) || secretValues.MatchString(v) {
				out = append(out, m.prefix+k)
			}
		}
	}
	return out
}

// envPlaceholder and headerPlaceholder are what an export without
// secrets writes in place of a value. An import that finds one keeps
// the stored value, so an export imported back changes nothing.
func envPlaceholder(key string) string { return "${" + key + "}" }

func headerPlaceholder(key string) string {
	return "${SWITCHBOARD_HEADER_" + strings.ToUpper(slugUnsafeEnv.ReplaceAllString(key, "_")) + "}"
}

var slugUnsafeEnv = regexp.MustCompile(`[^A-Za-z0-9]+`)

// inputPlaceholder is the placeholder of a VS Code export: a reference to
// an input (a password prompt) of its own.
func inputPlaceholder(id, key string) string { return "${input:" + inputID(id, key) + "}" }

func inputID(id, key string) string { return "switchboard-" + id + "-" + key }

// ExportServers writes the servers in a client's format. Secret values
// are replaced by placeholders unless withSecrets.
func ExportServers(format string, servers []store.Server, withSecrets bool) ([]byte, error) {
	var out []clientconfig.Server
	var inputs []clientconfig.Input
	for _, s := range servers {
		cs := clientconfig.Server{Name: s.ID, Transport: s.Transport, Command: s.Command, Args: s.Args,
			Cwd: s.Cwd, URL: s.URL, Disabled: !s.Enabled}
		secret := func(m map[string]string, placeholder func(string) string) map[string]string {
			if len(m) == 0 {
				return nil
			}
			out := make(map[string]string, len(m))
			for k, v := range m {
				switch {
				case withSecrets:
					out[k] = v
				case format == clientconfig.VSCode:
					out[k] = inputPlaceholder(s.ID, k)
					inputs = append(inputs, clientconfig.Input{ID: inputID(s.ID, k), Type: "promptString",
						Description: k + " of " + s.ID, Password: true})
				default:
					out[k] = placeholder(k)
				}
			}
			return out
		}
		cs.Env = secret(s.Env, envPlaceholder)
		cs.Headers = secret(s.Headers, headerPlaceholder)
		out = append(out, cs)
	}
	sort.Slice(inputs, func(i, j int) bool { return inputs[i].ID < inputs[j].ID })
	return clientconfig.Export(format, out, inputs)
}

// SelectServers picks the servers with the given ids, in store order
// (all of them if ids is empty), and lists the ids it did not find.
func SelectServers(sums []store.Summary, ids []string) (servers []store.Server, missing []string) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for _, sum := range sums {
		if len(ids) == 0 || want[sum.Server.ID] {
			servers = append(servers, sum.Server)
			delete(want, sum.Server.ID)
		}
	}
	return servers, sortedKeys(want)
}

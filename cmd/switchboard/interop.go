package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
	"github.com/switchboard-dev/switchboard/internal/secretkey"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// openStoreFor opens the database for a command that changes or reads
// it while no dashboard runs, its secrets sealed with the key kc finds
// (see secrets.go).
func openStoreFor(ctx context.Context, cmd, dbPath string, kc keyConfig, getenv func(string) string, stderr io.Writer, create bool) (store.Store, error) {
	db, err := openBoltFor(cmd, dbPath, kc, getenv, stderr)
	if err != nil {
		return nil, err
	}
	s, err := sealStore(ctx, db, kc, getenv, dbPath, sealOptions{Create: create})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if !s.none {
		db.SealWith(secretkey.SealKey(s.key.Current))
	}
	return s.st.Store(), nil
}

// openBoltFor opens the database file for a command while no dashboard
// runs (the dashboard holds the file's lock), its seal keyed by the key
// kc finds.
func openBoltFor(cmd, dbPath string, kc keyConfig, getenv func(string) string, stderr io.Writer) (*bolt.DB, error) {
	db, err := bolt.Open(dbPath, bolt.Options{Warn: func(msg string) { fmt.Fprintln(stderr, "warning:", msg) }, SealKey: peekSealKey(kc, getenv, dbPath)})
	if errors.Is(err, store.ErrInUse) {
		return nil, fmt.Errorf("%s: %w; a running dashboard keeps its database locked: use its Import page (or the API: POST /api/v1/import, GET /api/v1/export), or stop it", cmd, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return db, nil
}

func dbFlag(fset *flag.FlagSet, getenv func(string) string) *string {
	dbPath := defaultDBPath(runtime.GOOS, getenv)
	if v := getenv("SWITCHBOARD_DB"); v != "" {
		dbPath = v
	}
	return fset.String("db", dbPath, "database file (env SWITCHBOARD_DB)")
}

// importCmd is `switchboard import FILE [--dry-run] [--format F]
// [--update NAME]… [--update-all] [--as-new NAME]…`: it prints the dry
// run and, unless --dry-run, adds the new servers; a server that differs
// from one Switchboard has is overwritten only if asked by name (or
// --update-all), or added under a new id with --as-new.
func importCmd(_ context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("import", flag.ContinueOnError)
	fset.SetOutput(stderr)
	db := dbFlag(fset, getenv)
	dry := fset.Bool("dry-run", false, "only show what would change")
	var kc keyConfig
	keyFlags(fset, &kc, getenv)
	format := fset.String("format", "", "the file's format: "+strings.Join(clientconfig.Formats, ", ")+" (default: detect)")
	updateAll := fset.Bool("update-all", false, "overwrite every server that differs from the file")
	var update, asNew []string
	fset.Func("update", "overwrite the server of this entry (repeatable)", func(v string) error { update = append(update, v); return nil })
	fset.Func("as-new", "add this entry under a new id where a different server has its id (repeatable)", func(v string) error { asNew = append(asNew, v); return nil })
	fset.Usage = func() {
		fmt.Fprint(stderr, "usage: switchboard import [flags] FILE   (FILE - reads standard input)\n\n"+
			"Imports MCP servers from a Claude Desktop, Claude Code, Cursor, Windsurf, VS Code or Codex\n"+
			"config. It always shows the dry run; imported servers are never verified until you confirm\n"+
			"their command in the dashboard.\n\n")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	if fset.NArg() != 1 {
		fset.Usage()
		return usageError("import needs exactly one file; got %q", fset.Args())
	}
	name := fset.Arg(0)
	var in io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in = f
	}
	text, err := io.ReadAll(io.LimitReader(in, maxImportFile+1))
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if len(text) > maxImportFile {
		return fmt.Errorf("import: %s is over %d MiB", name, maxImportFile>>20)
	}
	// A dry run reads the database only if there is one: it must not
	// create it.
	var st importStore = emptyStore{}
	if _, statErr := os.Stat(*db); statErr == nil || !*dry {
		db, err := openStoreFor(context.Background(), "import", *db, kc, getenv, stderr, !*dry)
		if err != nil {
			return err
		}
		defer db.Close()
		st = db
	}
	plan, err := serverconfig.PlanImport(context.Background(), st, *format, text)
	if err != nil {
		return fmt.Errorf("import: %s: %w", name, err)
	}
	byName := map[string]string{}
	for _, r := range plan.Rows {
		if r.Action == serverconfig.ImportUpdate && *updateAll {
			byName[r.Name] = serverconfig.ChoiceUpdate
		}
	}
	for _, names := range []struct {
		list   []string
		choice string
	}{{update, serverconfig.ChoiceUpdate}, {asNew, serverconfig.ChoiceNew}} {
		for _, n := range names.list {
			if !hasRow(plan, n, serverconfig.ImportUpdate) {
				return usageError("import: no entry %q differs from a server Switchboard has", n)
			}
			byName[n] = names.choice
		}
	}
	choices, err := serverconfig.ChoicesByName(plan, byName)
	if err != nil {
		return usageError("import: %v", err)
	}
	printPlan(stdout, plan, choices)
	if *dry {
		fmt.Fprintln(stdout, "Dry run: nothing changed.")
		return nil
	}
	res := serverconfig.ApplyImport(context.Background(), st, plan, choices)
	for _, l := range res.Lines {
		fmt.Fprintln(stdout, printable(l))
	}
	fmt.Fprintf(stdout, "Imported: %d added, %d updated, %d skipped, %d not importable, %d failed. Imported servers wait for your confirmation of their command before their first Verify.\n",
		res.Added, res.Updated, res.Skipped, res.Invalid, res.Failed)
	if res.Failed > 0 || res.Invalid > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("import: %d entries not imported", res.Failed+res.Invalid)}
	}
	return nil
}

// maxImportFile caps a config file the command reads.
const maxImportFile = 16 << 20

// importStore is what an import needs of the store.
type importStore interface {
	Summaries(ctx context.Context) ([]store.Summary, error)
	CreateServer(ctx context.Context, s store.Server) error
	UpdateServer(ctx context.Context, s store.Server) error
}

// emptyStore is the store of a dry run without a database yet.
type emptyStore struct{}

func (emptyStore) Summaries(context.Context) ([]store.Summary, error) { return nil, nil }
func (emptyStore) CreateServer(context.Context, store.Server) error   { return errors.New("dry run") }
func (emptyStore) UpdateServer(context.Context, store.Server) error   { return errors.New("dry run") }

// printable quotes what a config file wrote that a terminal would act on
// (control characters, escape sequences).
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) && r != '\t' {
			b.WriteString(strconv.QuoteRune(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hasRow(p serverconfig.ImportPlan, name, action string) bool {
	for _, r := range p.Rows {
		if r.Name == name && r.Action == action {
			return true
		}
	}
	return false
}

// printPlan prints the dry run: a line per entry, then its details.
func printPlan(w io.Writer, p serverconfig.ImportPlan, choices map[int]string) {
	fmt.Fprintf(w, "Format: %s\n", p.Format)
	for _, warn := range p.Warnings {
		fmt.Fprintf(w, "warning: %s\n", printable(warn))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tID\tACTION\tLINE\tDOES")
	for i, r := range p.Rows {
		does := r.Choice
		if c, ok := choices[i]; ok {
			does = c
		}
		switch {
		case r.Action == serverconfig.ImportError:
			does = "cannot be imported"
		case does == serverconfig.ChoiceNew:
			does = "add as " + r.NewID
		}
		fmt.Fprintf(tw, "%q\t%s\t%s\t%d:%d\t%s\n", r.Name, r.ID, r.Action, r.Line, r.Col, does)
	}
	tw.Flush()
	for _, r := range p.Rows {
		var details []string
		if r.Target != "" && r.Action != serverconfig.ImportSame {
			details = append(details, "runs: "+r.Target)
		}
		for _, d := range r.Diff {
			details = append(details, fmt.Sprintf("%s: %s → %s", d.Field, d.Old, d.New))
		}
		for _, s := range r.Secrets {
			details = append(details, s+" looks like a secret: stored as one, masked from now on")
		}
		for _, ref := range r.Refs {
			details = append(details, "reference kept as written: "+ref)
		}
		details = append(details, r.Notes...)
		details = append(details, r.Errors...)
		if len(details) > 0 {
			fmt.Fprintf(w, "%q:\n", r.Name)
			for _, d := range details {
				fmt.Fprintf(w, "  %s\n", printable(d))
			}
		}
	}
}

// exportCmd is `switchboard export --format F [--server ID]…
// [--include-secrets] [-o FILE]`.
func exportCmd(_ context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	ctx := context.Background()
	fset := flag.NewFlagSet("export", flag.ContinueOnError)
	fset.SetOutput(stderr)
	db := dbFlag(fset, getenv)
	format := fset.String("format", "", "one of "+strings.Join(clientconfig.Formats, ", ")+" (required)")
	secrets := fset.Bool("include-secrets", false, "write env and header values (otherwise placeholders)")
	var kc keyConfig
	keyFlags(fset, &kc, getenv)
	out := fset.String("o", "", "write to this file instead of standard output")
	addr := cmpOr(getenv("SWITCHBOARD_ADDR"), "127.0.0.1:"+strconv.Itoa(DefaultPort))
	fset.StringVar(&addr, "addr", addr, "the dashboard's address, asked for the export while it runs (env SWITCHBOARD_ADDR)")
	var ids []string
	fset.Func("server", "export only this server (repeatable; default: all)", func(v string) error { ids = append(ids, v); return nil })
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: 2}
	}
	if fset.NArg() > 0 {
		return usageError("export takes no arguments, got %q", fset.Args())
	}
	if *format == "" {
		return usageError("export needs --format, one of %s", strings.Join(clientconfig.Formats, ", "))
	}
	if _, err := os.Stat(*db); err != nil {
		return fmt.Errorf("export: there is no database at %s (choose one with --db or SWITCHBOARD_DB)", *db)
	}
	var data []byte
	var n int
	st, err := openStoreFor(ctx, "export", *db, kc, getenv, stderr, false)
	switch {
	case errors.Is(err, store.ErrInUse):
		// The dashboard runs, and holds the database: it exports.
		api := &dashboardAPI{base: "http://" + addr, token: getenv("SWITCHBOARD_TOKEN")}
		if api.token == "" {
			if b, err := os.ReadFile(apiTokenPath(*db)); err == nil {
				api.token = strings.TrimSpace(string(b))
			}
		}
		q := url.Values{"format": {*format}, "server": ids}
		if *secrets {
			q.Set("secrets", "true")
		}
		if data, err = api.get(ctx, "/api/v1/export?"+q.Encode()); err != nil {
			return fmt.Errorf("export: the dashboard runs and holds the database, and exporting through it failed: %w", err)
		}
	case err != nil:
		return err
	default:
		defer st.Close()
		sums, err := st.Summaries(ctx)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		servers, missing := serverconfig.SelectServers(sums, ids)
		if len(missing) > 0 {
			return fmt.Errorf("export: no server %s", strings.Join(missing, ", "))
		}
		if data, err = serverconfig.ExportServers(*format, servers, *secrets); err != nil {
			return usageError("export: %v", err)
		}
		n = len(servers)
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	if err := os.WriteFile(*out, data, 0o600); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if n > 0 {
		fmt.Fprintf(stderr, "Exported %d servers to %s\n", n, *out)
	} else {
		fmt.Fprintf(stderr, "Exported to %s\n", *out)
	}
	return nil
}

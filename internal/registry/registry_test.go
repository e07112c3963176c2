package registry_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"

	"github.com/switchboard-dev/switchboard/internal/registry"
	"github.com/switchboard-dev/switchboard/internal/registry/registrytest"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

func openStore(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A registry is copied across its pages, searched from the copy — also
// while it is down, the copy's age said — and read through before its
// first copy, never shown as empty; an entry that breaks server.json's
// limits is left out.
func TestACopyIsPulledSearchedAndServedOffline(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t, append(registrytest.Seed(), registrytest.Filler(130)...))
	c := registry.NewCopies(openStore(t), []string{reg.URL}, 0, slog.New(slog.DiscardHandler))

	// Before the first pull: read through.
	page, err := c.Search(ctx, "weather", "", 0)
	if err != nil || len(page.Servers) != 1 || !page.Copies[0].ReadThrough {
		t.Fatalf("a search before the first copy = %+v, %v; want the weather server, read through", page, err)
	}
	reg.Down.Store(true)
	if _, err := c.Search(ctx, "weather", "", 0); err == nil || !strings.Contains(err.Error(), "no copy of the registry yet") {
		t.Fatalf("a search with no copy and the registry down = %v; want it said, not an empty list", err)
	}
	reg.Down.Store(false)

	before := reg.Requests.Load()
	if err := c.Pull(ctx, reg.URL); err != nil {
		t.Fatal(err)
	}
	if pages := reg.Requests.Load() - before; pages < 2 {
		t.Errorf("the pull took %d requests; want every page (the copy has over 100 entries)", pages)
	}
	reg.Down.Store(true) // from now on, the copy alone
	page, err = c.Search(ctx, "", "", 100)
	if err != nil || page.Copies[0].ReadThrough || page.Copies[0].Pull.At.IsZero() {
		t.Fatalf("a search of the copy = %+v, %v", page.Copies, err)
	}
	all := page.Servers
	for page.NextCursor != "" {
		if page, err = c.Search(ctx, "", page.NextCursor, 100); err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Servers...)
	}
	if len(all) != 130+6 { // the seed's 7 names, less one whose name breaks the pattern
		t.Errorf("the copy lists %d servers; want 136", len(all))
	}
	for _, l := range all {
		if strings.Contains(l.Server.Name, "<") {
			t.Errorf("an entry whose name breaks the schema is listed: %q", l.Server.Name)
		}
	}
	page, _ = c.Search(ctx, "everything", "", 0)
	if len(page.Servers) != 1 || page.Servers[0].Latest != "2026.8.31" || !slices.Equal(page.Servers[0].Versions, []string{"2026.7.1", "2026.8.31"}) {
		t.Errorf("everything = %+v; want the latest 2026.8.31 of two versions", page.Servers)
	}
	page, _ = c.Search(ctx, "old file", "", 0)
	if len(page.Servers) != 1 || page.Servers[0].Status != "deprecated" {
		t.Errorf("the deprecated server = %+v", page.Servers)
	}
	// A newer version published: the next pull (updated_since) brings it.
	reg.Down.Store(false)
	newer := registrytest.Seed()[4] // weather
	newer.Server.Version = "3.2.0"
	reg.Put(newer)
	if err := c.Pull(ctx, reg.URL); err != nil {
		t.Fatal(err)
	}
	if l, ok, _ := c.Find(ctx, reg.URL, "com.example/weather"); !ok || l.Latest != "3.2.0" {
		t.Errorf("after the next pull weather = %+v; want 3.2.0 the latest", l)
	}
}

// Each kind of package maps to its pinned launch; a required value not
// given is refused on its field; a remote's URL and headers are filled.
func TestLaunchesArePinned(t *testing.T) {
	seed := map[string]v0.ServerJSON{}
	for _, e := range registrytest.Seed() {
		seed[e.Server.Name+"@"+e.Server.Version] = e.Server
	}
	const reg = "https://registry.example.com"
	everything := seed["io.github.switchboard-test/everything@2026.8.31"]
	l, errs := registry.LaunchOf(reg, everything, registry.Choice{}, registry.Inputs{})
	if len(errs) > 0 || l.Command != "npx" || !slices.Equal(l.Args, []string{"-y", "@modelcontextprotocol/server-everything@2026.8.31"}) || l.Source.Kind != "npm" {
		t.Errorf("npm = %+v, %v", l, errs)
	}
	ledger := seed["io.github.switchboard-test/ledger@1.7.2"]
	if _, errs := registry.LaunchOf(reg, ledger, registry.Choice{}, registry.Inputs{}); errs["env.LEDGER_API_KEY"] == "" {
		t.Errorf("a required secret not given = %v; want it refused on its field", errs)
	}
	l, errs = registry.LaunchOf(reg, ledger, registry.Choice{Index: 1}, registry.Inputs{Env: map[string]string{"LEDGER_API_KEY": "pat-1"}})
	if len(errs) > 0 || l.Command != "docker" || !slices.Equal(l.Args, []string{"run", "--rm", "-i", "-e", "LEDGER_API_KEY", "docker.io/switchboardtest/ledger-mcp-server:1.7.2"}) ||
		l.Env["LEDGER_API_KEY"] != "pat-1" {
		t.Errorf("oci = %+v, %v", l, errs)
	}
	if _, errs := registry.LaunchOf(reg, ledger, registry.Choice{Index: 2}, registry.Inputs{}); !strings.Contains(errs["package"], "mcpb") {
		t.Errorf("mcpb = %v; want it refused as not run yet", errs)
	}
	clock := seed["io.github.switchboard-test/clock@1.0.6"]
	l, errs = registry.LaunchOf(reg, clock, registry.Choice{}, registry.Inputs{Arguments: map[string]string{"timezone": "Europe/Paris"}})
	if len(errs) > 0 || l.Command != "uvx" || !slices.Equal(l.Args, []string{"clock-mcp==1.0.6", "Europe/Paris", "--format", "rfc3339"}) {
		t.Errorf("pypi = %+v, %v", l, errs)
	}
	if _, errs := registry.LaunchOf(reg, clock, registry.Choice{}, registry.Inputs{Arguments: map[string]string{"--format": "xml"}}); errs["arguments.--format"] == "" {
		t.Errorf("a value not among the choices = %v; want it refused", errs)
	}
	weather := seed["com.example/weather@3.1.0"]
	if _, errs := registry.LaunchOf(reg, weather, registry.Choice{Index: 0, Remote: true}, registry.Inputs{}); errs["arguments.tenant"] == "" || errs["headers.Authorization.token"] == "" {
		t.Errorf("a remote without its variables = %v; want each refused", errs)
	}
	l, errs = registry.LaunchOf(reg, weather, registry.Choice{Index: 0, Remote: true}, registry.Inputs{Arguments: map[string]string{"tenant": "acme"},
		Headers: map[string]string{"Authorization.token": "s3cret"}})
	if len(errs) > 0 || l.Transport != store.TransportHTTP || l.URL != "https://acme.weather.example.com/mcp" || l.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("remote = %+v, %v", l, errs)
	}
}

// What a hostile registry names cannot become an option of the runner
// or give a container the host: refused on the package, before anything
// is added (the confirmation would show it; it never gets there).
func TestAHostileEntryIsNotLaunched(t *testing.T) {
	const reg = "https://registry.example.com"
	base := registrytest.Seed()[3].Server // clock, pypi
	for name, edit := range map[string]func(s *v0.ServerJSON){
		"an identifier that is an option": func(s *v0.ServerJSON) { s.Packages[0].Identifier = "--index-url=https://evil.example.com" },
		"a version that is an option":     func(s *v0.ServerJSON) { s.Packages[0].Version = "-e" },
		"a range for a version":           func(s *v0.ServerJSON) { s.Packages[0].Version = "1.x" },
		"an npm name with a space":        func(s *v0.ServerJSON) { s.Packages[0].RegistryType, s.Packages[0].Identifier = "npm", "a b" },
		"an environment name of markup":   func(s *v0.ServerJSON) { s.Packages[0].EnvironmentVariables = []model.KeyValueInput{{Name: "A=B; rm"}} },
		"docker given the host's files": func(s *v0.ServerJSON) {
			s.Packages[0].RegistryType, s.Packages[0].Identifier = "oci", "docker.io/x/y:1"
			s.Packages[0].RuntimeArguments = []model.Argument{{Type: model.ArgumentTypeNamed, Name: "-v", InputWithVariables: model.InputWithVariables{Input: model.Input{Value: "/:/host"}}}}
		},
		"an image that is an option": func(s *v0.ServerJSON) { s.Packages[0].RegistryType, s.Packages[0].Identifier = "oci", "--privileged" },
		"npx told to run another package": func(s *v0.ServerJSON) {
			s.Packages[0].RegistryType, s.Packages[0].Identifier = "npm", "legit"
			s.Packages[0].RuntimeArguments = []model.Argument{{Type: model.ArgumentTypeNamed, Name: "--package", InputWithVariables: model.InputWithVariables{Input: model.Input{Value: "evil@latest"}}}}
		},
		"docker given a volume, written as one": func(s *v0.ServerJSON) {
			s.Packages[0].RegistryType, s.Packages[0].Identifier, s.Packages[0].Version = "oci", "docker.io/x/y:1.0.6", "1.0.6"
			s.Packages[0].RuntimeArguments = []model.Argument{{Type: model.ArgumentTypeNamed, Name: "-v/:/host"}}
		},
		"docker given the host's credentials": func(s *v0.ServerJSON) {
			s.Packages[0].RegistryType, s.Packages[0].Identifier, s.Packages[0].Version = "oci", "docker.io/x/y:1.0.6", "1.0.6"
			s.Packages[0].RuntimeArguments = []model.Argument{{Type: model.ArgumentTypeNamed, Name: "--env-file=/root/.aws/credentials"}}
		},
		"an npm version that is a range": func(s *v0.ServerJSON) {
			s.Packages[0].RegistryType, s.Packages[0].Identifier, s.Packages[0].Version = "npm", "legit", "1"
		},
		"an image not pinned": func(s *v0.ServerJSON) { s.Packages[0].RegistryType, s.Packages[0].Identifier = "oci", "docker.io/x/y" },
		"an image of latest": func(s *v0.ServerJSON) {
			s.Packages[0].RegistryType, s.Packages[0].Identifier = "oci", "docker.io/x/y:latest"
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := base
			s.Packages = []model.Package{base.Packages[0]}
			s.Packages[0].PackageArguments = nil
			edit(&s)
			if l, errs := registry.LaunchOf(reg, s, registry.Choice{}, registry.Inputs{}); errs["package"] == "" {
				t.Errorf("launched as %s %q; want it refused", l.Command, l.Args)
			}
		})
	}
}

// A URL variable stays in its part of the URL: it cannot change the
// remote's host (where its headers, secrets included, go).
func TestAURLVariableCannotMoveTheHost(t *testing.T) {
	s := v0.ServerJSON{Name: "com.example/port", Version: "1.0.0", Remotes: []model.Transport{{Type: "streamable-http", URL: "https://mcp.example.com:{port}/mcp",
		Variables: map[string]model.Input{"port": {IsRequired: true}}}}}
	l, errs := registry.LaunchOf("https://r.example.com", s, registry.Choice{Remote: true}, registry.Inputs{Arguments: map[string]string{"port": "443@evil.com"}})
	if len(errs) == 0 && !strings.HasPrefix(l.URL, "https://mcp.example.com:") {
		t.Errorf("the remote's URL = %q; want its host kept", l.URL)
	}
	if u, err := url.Parse(l.URL); err == nil && u.Hostname() == "evil.com" {
		t.Errorf("a variable moved the host to %s", u.Host)
	}
}

// Versions order as semantic versions (a pre-release below its release),
// consistently; a deleted version is never the newest shown.
func TestVersionsOrderAndDeletedOnesAreNotNewest(t *testing.T) {
	for _, c := range []struct{ a, b string }{{"2.0.0-rc.1", "2.0.0"}, {"1.9.0", "1.10.0"}, {"9", "10"}, {"10", "1a"}, {"1.0.0-alpha", "1.0.0-beta"}} {
		if registry.CompareVersions(c.a, c.b) >= 0 || registry.CompareVersions(c.b, c.a) <= 0 {
			t.Errorf("%s is not below %s", c.a, c.b)
		}
	}
	entries := registrytest.Seed()
	bad := entries[1] // everything 2026.8.31, the latest
	bad.Meta.Official.Status = "deleted"
	entries[1] = bad
	reg := registrytest.Start(t, entries)
	c := registry.NewCopies(openStore(t), []string{reg.URL}, 0, slog.New(slog.DiscardHandler))
	if err := c.Pull(context.Background(), reg.URL); err != nil {
		t.Fatal(err)
	}
	l, ok, _ := c.Find(context.Background(), reg.URL, "io.github.switchboard-test/everything")
	if !ok || l.Latest != "2026.7.1" {
		t.Errorf("newest shown = %q; want 2026.7.1 (2026.8.31 was deleted)", l.Latest)
	}
	if _, err := c.Version(context.Background(), reg.URL, "io.github.switchboard-test/everything", "2026.8.31"); err != registry.ErrDeleted {
		t.Errorf("the deleted version = %v; want ErrDeleted", err)
	}
}

// A registry that pages forever (each page one bad entry and a new
// cursor) ends the pull with an error, not a loop.
func TestAPullOfEndlessPagesEnds(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		fmt.Fprintf(w, `{"servers":[{"server":{"name":"bad name","version":"1"}}],"metadata":{"nextCursor":"c%d","count":1}}`, n)
	}))
	defer srv.Close()
	c := registry.NewCopies(openStore(t), []string{srv.URL}, 0, slog.New(slog.DiscardHandler))
	if err := c.Pull(context.Background(), srv.URL); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("pull of endless pages = %v; want it refused", err)
	}
	if n > 1000 {
		t.Errorf("%d pages read; want it bounded", n)
	}
}

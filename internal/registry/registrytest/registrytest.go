// Package registrytest is an MCP Registry of the tests' own: it speaks
// the API v0.1 (GET /v0.1/servers with search, cursor, limit,
// version=latest and updated_since; /v0.1/servers/{name}/versions[/{v}])
// over entries of real server.json documents (testdata/servers.json, of
// schema 2025-12-11), padded with generated ones past one page.
package registrytest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v0 "github.com/modelcontextprotocol/registry/pkg/api/v0"
	"github.com/modelcontextprotocol/registry/pkg/model"
)

//go:embed testdata/servers.json
var seed []byte

// Seed is the entries of testdata/servers.json.
func Seed() []v0.ServerResponse {
	var out []v0.ServerResponse
	if err := json.Unmarshal(seed, &out); err != nil {
		panic(err)
	}
	return out
}

// Filler is n generated servers (io.github.filler/server-NNN), each with
// one npm package.
func Filler(n int) []v0.ServerResponse {
	var out []v0.ServerResponse
	for i := range n {
		name := fmt.Sprintf("io.github.filler/server-%03d", i)
		out = append(out, v0.ServerResponse{
			Server: v0.ServerJSON{Schema: model.CurrentSchemaURL, Name: name, Description: fmt.Sprintf("Filler server number %d.", i), Version: "1.0.0",
				Packages: []model.Package{{RegistryType: model.RegistryTypeNPM, Identifier: fmt.Sprintf("filler-%03d", i), Version: "1.0.0",
					Transport: model.Transport{Type: model.TransportTypeStdio}}}},
			Meta: v0.ResponseMeta{Official: &v0.RegistryExtensions{Status: model.StatusActive, IsLatest: true,
				PublishedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
		})
	}
	return out
}

// Registry is a running registry of the tests.
type Registry struct {
	URL string
	srv *httptest.Server

	mu      sync.Mutex
	entries []v0.ServerResponse
	// Requests counts the requests it answered; Down makes it answer
	// 503 to every one.
	Requests atomic.Int64
	Down     atomic.Bool
}

// Start serves entries until the test's cleanup closes it.
func Start(t interface{ Cleanup(func()) }, entries []v0.ServerResponse) *Registry {
	r := &Registry{entries: entries}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	t.Cleanup(r.srv.Close)
	return r
}

// Handler serves entries as a registry (for cmd/registry-fixture).
func Handler(entries []v0.ServerResponse) http.Handler {
	r := &Registry{entries: entries}
	return http.HandlerFunc(r.serve)
}

// Put adds (or replaces) an entry, updated now.
func (r *Registry) Put(e v0.ServerResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Meta.Official == nil {
		e.Meta.Official = &v0.RegistryExtensions{Status: model.StatusActive, IsLatest: true}
	}
	e.Meta.Official.UpdatedAt = time.Now().UTC()
	if e.Meta.Official.IsLatest {
		for i := range r.entries {
			if r.entries[i].Server.Name == e.Server.Name && r.entries[i].Meta.Official != nil {
				r.entries[i].Meta.Official.IsLatest = false
			}
		}
	}
	for i := range r.entries {
		if r.entries[i].Server.Name == e.Server.Name && r.entries[i].Server.Version == e.Server.Version {
			r.entries[i] = e
			return
		}
	}
	r.entries = append(r.entries, e)
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.Requests.Add(1)
	if r.Down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	r.mu.Lock()
	entries := slices.Clone(r.entries)
	r.mu.Unlock()
	slices.SortStableFunc(entries, func(a, b v0.ServerResponse) int {
		return strings.Compare(a.Server.Name+"@"+a.Server.Version, b.Server.Name+"@"+b.Server.Version)
	})
	path := req.URL.EscapedPath()
	switch {
	case path == "/v0.1/servers":
		r.list(w, req, entries)
	case strings.HasPrefix(path, "/v0.1/servers/"):
		rest := strings.TrimPrefix(path, "/v0.1/servers/")
		escName, tail, _ := strings.Cut(rest, "/versions")
		name, err := url.PathUnescape(escName)
		if err != nil {
			http.NotFound(w, req)
			return
		}
		var versions []v0.ServerResponse
		for _, e := range entries {
			if e.Server.Name == name {
				versions = append(versions, e)
			}
		}
		if len(versions) == 0 {
			http.NotFound(w, req)
			return
		}
		if tail == "" {
			writeJSON(w, v0.ServerListResponse{Servers: versions, Metadata: v0.Metadata{Count: len(versions)}})
			return
		}
		version, _ := url.PathUnescape(strings.TrimPrefix(tail, "/"))
		for _, e := range versions {
			if e.Server.Version == version || version == "latest" && e.Meta.Official != nil && e.Meta.Official.IsLatest {
				writeJSON(w, e)
				return
			}
		}
		http.NotFound(w, req)
	default:
		http.NotFound(w, req)
	}
}

func (r *Registry) list(w http.ResponseWriter, req *http.Request, entries []v0.ServerResponse) {
	q := req.URL.Query()
	limit := 30
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 && n <= 100 {
		limit = n
	}
	var since time.Time
	if s := q.Get("updated_since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			http.Error(w, "updated_since: "+err.Error(), http.StatusBadRequest)
			return
		}
		since = t
	}
	var out []v0.ServerResponse
	for _, e := range entries {
		o := e.Meta.Official
		switch {
		case q.Get("search") != "" && !strings.Contains(strings.ToLower(e.Server.Name), strings.ToLower(q.Get("search"))):
		case q.Get("version") == "latest" && (o == nil || !o.IsLatest):
		case !since.IsZero() && (o == nil || !o.UpdatedAt.After(since)):
		case q.Get("cursor") != "" && e.Server.Name+"@"+e.Server.Version <= q.Get("cursor"):
		default:
			out = append(out, e)
		}
	}
	page := v0.ServerListResponse{Servers: out}
	if len(out) > limit {
		page.Servers = out[:limit]
		last := out[limit-1].Server
		page.Metadata.NextCursor = last.Name + "@" + last.Version
	}
	if page.Servers == nil {
		page.Servers = []v0.ServerResponse{}
	}
	page.Metadata.Count = len(page.Servers)
	writeJSON(w, page)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

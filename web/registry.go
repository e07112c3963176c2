package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	v0 "github.com/modelcontextprotocol/registry/pkg/api/v0"

	"github.com/switchboard-dev/switchboard/internal/registry"
	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// registryServerJSON is one server of a registry search, as the API
// answers it: the server.json of its newest version (as the registry
// has it: hostile input), and Switchboard's own facts under _meta.
type registryServerJSON struct {
	Server v0.ServerJSON       `json:"server"`
	Meta   registryEntryMetaJS `json:"_meta"`
}

type registryEntryMetaJS struct {
	Registry string   `json:"registry"`
	Status   string   `json:"status"`
	Latest   string   `json:"latest"`
	Versions []string `json:"versions"`
	// Added are the ids of the servers added from it.
	Added []string `json:"added"`
}

type registryCopyJSON struct {
	Registry    string `json:"registry"`
	PulledAt    string `json:"pulled_at,omitempty"`
	Entries     int    `json:"entries"`
	ReadThrough bool   `json:"read_through,omitempty"`
	Error       string `json:"last_error,omitempty"`
}

// noRegistry answers a registry route of a Switchboard without registries.
var noRegistry = &apiError{Status: http.StatusNotFound, Message: "this Switchboard browses no registry"}

// searchRegistry is a page of the registries' servers, and which of
// them this Switchboard has (by the servers added from each).
func (s *Server) searchRegistry(ctx context.Context, query, cursor string, limit int) (registry.Page, map[string][]string, error) {
	page, err := s.deps.Registry.Search(ctx, query, cursor, limit)
	if err != nil {
		return page, nil, err
	}
	sums, err := s.deps.Store.Summaries(ctx)
	if err != nil {
		return page, nil, err
	}
	added := map[string][]string{}
	for _, sum := range sums {
		if f := sum.Server.From; f != nil {
			added[f.Registry+"\n"+f.Name] = append(added[f.Registry+"\n"+f.Name], sum.Server.ID)
		}
	}
	return page, added, nil
}

// registryError is what a failed search answers.
func registryError(err error) error {
	switch {
	case errors.Is(err, registry.ErrNoCopy):
		return &apiError{Status: http.StatusServiceUnavailable, Message: err.Error() + ": try again once it can be reached"}
	case strings.Contains(err.Error(), "cursor"):
		return &apiError{Status: http.StatusBadRequest, Message: err.Error(), Fields: map[string]string{"cursor": "not a cursor a page gave"}}
	}
	return err
}

// handleAPIRegistryServers serves GET /api/v1/registry/servers?search=
// &cursor=&limit=: the registries' servers from their copies.
func (s *Server) handleAPIRegistryServers(c echo.Context) error {
	if s.deps.Registry == nil {
		return noRegistry
	}
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > registry.MaxLimit {
			return &apiError{Status: http.StatusBadRequest, Message: "limit must be 1 to 100", Fields: map[string]string{"limit": "1 to 100"}}
		}
		limit = n
	}
	page, added, err := s.searchRegistry(c.Request().Context(), c.QueryParam("search"), c.QueryParam("cursor"), limit)
	if err != nil {
		return registryError(err)
	}
	out := struct {
		Servers  []registryServerJSON `json:"servers"`
		Metadata struct {
			NextCursor string `json:"nextCursor,omitempty"`
			Count      int    `json:"count"`
		} `json:"metadata"`
		Copies []registryCopyJSON `json:"copies"`
	}{Servers: []registryServerJSON{}}
	for _, l := range page.Servers {
		out.Servers = append(out.Servers, registryServerJSON{Server: l.Server, Meta: registryEntryMetaJS{Registry: l.Registry, Status: l.Status,
			Latest: l.Latest, Versions: l.Versions, Added: append([]string{}, added[l.Registry+"\n"+l.Server.Name]...)}})
	}
	out.Metadata.NextCursor, out.Metadata.Count = page.NextCursor, len(out.Servers)
	for _, cs := range page.Copies {
		out.Copies = append(out.Copies, copyJSON(cs))
	}
	return c.JSON(http.StatusOK, out)
}

func copyJSON(cs registry.CopyState) registryCopyJSON {
	j := registryCopyJSON{Registry: cs.Registry, Entries: cs.Pull.Entries, ReadThrough: cs.ReadThrough, Error: cs.Pull.Error}
	if !cs.Pull.At.IsZero() {
		j.PulledAt = cs.Pull.At.UTC().Format("2006-01-02T15:04:05Z")
	}
	return j
}

// handleAPIRegistryRefresh serves POST /api/v1/registry/refresh: every
// registry's copy brought up to date now; 200 with the copies, or 502
// naming a registry that could not be pulled.
func (s *Server) handleAPIRegistryRefresh(c echo.Context) error {
	if s.deps.Registry == nil {
		return noRegistry
	}
	ctx := c.Request().Context()
	var failed []string
	for _, r := range s.deps.Registry.Registries() {
		if err := s.deps.Registry.Pull(ctx, r); err != nil {
			failed = append(failed, r+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		return &apiError{Status: http.StatusBadGateway, Message: "could not pull " + strings.Join(failed, "; ")}
	}
	page, err := s.deps.Registry.Search(ctx, "", "", 1)
	if err != nil {
		return registryError(err)
	}
	out := []registryCopyJSON{}
	for _, cs := range page.Copies {
		out = append(out, copyJSON(cs))
	}
	return c.JSON(http.StatusOK, map[string]any{"copies": out})
}

// addRequest is POST /api/v1/registry/add's body.
type addRequest struct {
	Registry  string            `json:"registry"`
	Name      string            `json:"name"`
	Version   string            `json:"version"`
	Package   *int              `json:"package"`
	Remote    *int              `json:"remote"`
	ID        string            `json:"id"`
	Env       map[string]string `json:"env"`
	Arguments map[string]string `json:"arguments"`
	Headers   map[string]string `json:"headers"`
}

// handleAPIRegistryAdd serves POST /api/v1/registry/add: the server of a
// registry entry, its launch pinned to the version asked for, added as
// any server is (nothing runs before a person confirms its launch).
func (s *Server) handleAPIRegistryAdd(c echo.Context) error {
	if s.deps.Registry == nil {
		return noRegistry
	}
	var req addRequest
	if err := decodeJSON(c, 64<<10, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	srv, err := s.addFromRegistry(ctx, req, byOf(ctx))
	if err != nil {
		return err
	}
	sum, err := s.deps.Store.Summary(ctx, srv.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s.serverToJSON(ctx, sum))
}

// addFromRegistry adds the server req names, on behalf of by.
func (s *Server) addFromRegistry(ctx context.Context, req addRequest, by string) (store.Server, error) {
	fields := map[string]string{}
	if strings.TrimSpace(req.Name) == "" {
		fields["name"] = "The server's name in the registry is required."
	}
	version := strings.TrimSpace(req.Version)
	if version == "" {
		version = "latest"
	}
	reg := strings.TrimRight(req.Registry, "/")
	switch {
	case reg == "":
		reg = s.deps.Registry.Registries()[0]
	case s.deps.Registry.Client(reg) == nil:
		fields["registry"] = "Not one of this Switchboard's registries: " + strings.Join(s.deps.Registry.Registries(), ", ")
	}
	if len(fields) > 0 {
		return store.Server{}, validationError(fields)
	}
	doc, err := s.deps.Registry.Version(ctx, reg, req.Name, version)
	if errors.Is(err, registry.ErrDeleted) {
		return store.Server{}, validationError(map[string]string{"version": "the registry deleted this version: it is not added"})
	} else if errors.Is(err, registry.ErrNotFound) {
		return store.Server{}, &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("the registry has no %s version %s", req.Name, version),
			Fields: map[string]string{"version": "not in the registry"}}
	} else if err != nil {
		return store.Server{}, &apiError{Status: http.StatusBadGateway, Message: "the server could not be read from the registry: " + err.Error()}
	}
	choice, ok := registry.DefaultChoice(doc)
	switch {
	case req.Package != nil:
		choice = registry.Choice{Index: *req.Package}
	case req.Remote != nil:
		choice = registry.Choice{Index: *req.Remote, Remote: true}
	case !ok:
		return store.Server{}, validationError(map[string]string{"package": "it has no package Switchboard runs (npm, pypi, oci) and no remote"})
	}
	l, errs := registry.LaunchOf(reg, doc, choice, registry.Inputs{Env: req.Env, Arguments: req.Arguments, Headers: req.Headers})
	if len(errs) > 0 {
		return store.Server{}, validationError(errs)
	}
	id := strings.TrimSpace(req.ID)
	if id == "" {
		if id, err = s.freeID(ctx, doc.Name); err != nil {
			return store.Server{}, err
		}
	}
	in := serverconfig.Input{ID: id, Name: displayName(doc), Transport: l.Transport, Command: l.Command, Args: l.Args, URL: l.URL,
		DefaultPolicy: string(store.PolicyAsk), Enabled: true}
	for k, v := range l.Env {
		in.Env = append(in.Env, serverconfig.KV{Key: k, Value: v})
	}
	for k, v := range l.Headers {
		in.Headers = append(in.Headers, serverconfig.KV{Key: k, Value: v})
	}
	srv, verrs := serverconfig.Validate(in, nil)
	if len(verrs) > 0 {
		return store.Server{}, validationError(verrs)
	}
	source := l.Source
	srv.From, srv.UpdatedBy = &source, by
	if err := s.deps.Store.CreateServer(ctx, srv); errors.Is(err, store.ErrExists) {
		return store.Server{}, &apiError{Status: http.StatusConflict, Message: "a server with this id already exists", Fields: map[string]string{"id": "already exists"}}
	} else if err != nil {
		return store.Server{}, err
	}
	s.log.Info("server added from a registry", "server", srv.ID, "registry", reg, "name", doc.Name, "version", doc.Version, "runs", source.Package, "by", by)
	return srv, nil
}

// displayName is a server's name as its list shows it: its title, else
// the name after its namespace, bounded.
func displayName(doc v0.ServerJSON) string {
	n := doc.Title
	if n == "" {
		_, n, _ = strings.Cut(doc.Name, "/")
	}
	if len(n) > 80 {
		n = n[:80]
	}
	return strings.ToValidUTF8(n, "")
}

// notID is what an id may not hold.
var notID = regexp.MustCompile(`[^a-z0-9-]+`)

// freeID is an id for the registry server named name that no server has:
// its name after the namespace, lower case, with -2, -3… if taken.
func (s *Server) freeID(ctx context.Context, name string) (string, error) {
	_, base, _ := strings.Cut(name, "/")
	base = strings.Trim(notID.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if len(base) > 28 {
		base = strings.Trim(base[:28], "-")
	}
	if base == "" || base == "new" {
		base = "server"
	}
	for i := 1; i < 100; i++ {
		id := base
		if i > 1 {
			id = base + "-" + strconv.Itoa(i)
		}
		if _, err := s.deps.Store.Server(ctx, id); errors.Is(err, store.ErrNotFound) {
			return id, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", validationError(map[string]string{"id": "give the server an id: every one made from its name is taken"})
}

// handleRegistryPage serves GET /registry: the registries' servers, a
// search, and each server's add.
func (s *Server) handleRegistryPage(c echo.Context) error {
	v := views.RegistryView{Query: c.QueryParam("search")}
	if s.deps.Registry == nil {
		v.Error = "This Switchboard browses no registry (switchboard serve -registry URL names one)."
		return render(c, http.StatusOK, views.RegistryPage(s.page(c, "Registry"), v))
	}
	page, added, err := s.searchRegistry(c.Request().Context(), v.Query, c.QueryParam("cursor"), registry.DefaultLimit)
	if err != nil {
		var ae *apiError
		if errors.As(registryError(err), &ae) {
			v.Error = ae.Message
		} else {
			return err
		}
	}
	for _, cs := range page.Copies {
		v.Copies = append(v.Copies, views.RegistryCopy{Registry: cs.Registry, PulledAt: cs.Pull.At, Entries: cs.Pull.Entries,
			ReadThrough: cs.ReadThrough, Error: cs.Pull.Error})
	}
	for _, l := range page.Servers {
		row := views.RegistryServer{Registry: l.Registry, Name: l.Server.Name, Title: l.Server.Title, Description: l.Server.Description,
			Status: l.Status, Latest: l.Latest, Versions: l.Versions, Added: added[l.Registry+"\n"+l.Server.Name]}
		if l.Server.Repository != nil {
			row.Repository = l.Server.Repository.URL
		}
		row.WebsiteURL = l.Server.WebsiteURL
		for _, p := range l.Server.Packages {
			row.Packages = append(row.Packages, views.RegistryPackage{Type: p.RegistryType, Identifier: p.Identifier, Version: p.Version,
				Runs: registry.Supported(p.RegistryType)})
		}
		for _, r := range l.Server.Remotes {
			row.Remotes = append(row.Remotes, r.Type+" "+r.URL)
		}
		_, row.CanAdd = registry.DefaultChoice(l.Server)
		v.Servers = append(v.Servers, row)
	}
	v.NextCursor = page.NextCursor
	return render(c, http.StatusOK, views.RegistryPage(s.page(c, "Registry"), v))
}

// handleRegistryAddForm serves POST /registry/add (name, version,
// registry, and each input as env.NAME, arguments.HINT, headers.NAME):
// the server added, on to the confirmation of its launch; a refusal
// shown on the registry page with the input kept.
func (s *Server) handleRegistryAddForm(c echo.Context) error {
	if s.deps.Registry == nil {
		return noRegistry
	}
	if err := c.Request().ParseForm(); err != nil {
		return err
	}
	req := addRequest{Registry: c.FormValue("registry"), Name: c.FormValue("name"), Version: c.FormValue("version"),
		Env: map[string]string{}, Arguments: map[string]string{}, Headers: map[string]string{}}
	for key, vals := range c.Request().PostForm {
		for prefix, m := range map[string]map[string]string{"env.": req.Env, "arguments.": req.Arguments, "headers.": req.Headers} {
			if name, ok := strings.CutPrefix(key, prefix); ok && len(vals) > 0 {
				m[name] = vals[0]
			}
		}
	}
	ctx := c.Request().Context()
	srv, err := s.addFromRegistry(ctx, req, byOf(ctx))
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			return err
		}
		given := map[string]string{}
		for _, m := range []struct {
			prefix string
			vals   map[string]string
		}{{"env.", req.Env}, {"arguments.", req.Arguments}, {"headers.", req.Headers}} {
			for k, v := range m.vals {
				given[m.prefix+k] = v
			}
		}
		return s.renderRegistryAdd(c, ae.Status, req.Registry, req.Name, req.Version, given, ae)
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+srv.ID+"/confirm")
}

// handleRegistryAddPage serves GET /registry/add?registry=&name=
// &version=: the form that adds the server.
func (s *Server) handleRegistryAddPage(c echo.Context) error {
	if s.deps.Registry == nil {
		return noRegistry
	}
	return s.renderRegistryAdd(c, http.StatusOK, c.QueryParam("registry"), c.QueryParam("name"), c.QueryParam("version"), nil, nil)
}

// renderRegistryAdd renders the add form of a registry's server, with
// the values given (secrets never shown again) and a refusal's errors.
func (s *Server) renderRegistryAdd(c echo.Context, status int, reg, name, version string, given map[string]string, refusal *apiError) error {
	reg = strings.TrimRight(reg, "/")
	if reg == "" {
		reg = s.deps.Registry.Registries()[0]
	}
	if version == "" {
		version = "latest"
	}
	if s.deps.Registry.Client(reg) == nil {
		return &apiError{Status: http.StatusNotFound, Message: "not one of this Switchboard's registries"}
	}
	doc, err := s.deps.Registry.Version(c.Request().Context(), reg, name, version)
	if errors.Is(err, registry.ErrDeleted) {
		return &apiError{Status: http.StatusGone, Message: "the registry deleted this version: it is not added"}
	} else if errors.Is(err, registry.ErrNotFound) {
		return &apiError{Status: http.StatusNotFound, Message: "the registry has no such server or version"}
	} else if err != nil {
		return &apiError{Status: http.StatusBadGateway, Message: "the server could not be read from the registry: " + err.Error()}
	}
	v := views.RegistryAddView{Registry: reg, Name: doc.Name, Version: doc.Version, Title: displayName(doc), Description: doc.Description}
	choice, ok := registry.DefaultChoice(doc)
	if !ok {
		v.Error = "It has no package Switchboard runs (npm, pypi, oci) and no remote."
	} else {
		v.Runs = runsText(doc, choice)
		for _, f := range registry.FieldsOf(doc, choice) {
			in := views.RegistryInput{Key: f.Key, Label: f.Label, Description: f.Description, Default: f.Default, Required: f.Required,
				Secret: f.Secret, Choices: f.Choices}
			if !f.Secret {
				in.Value = given[f.Key]
			}
			v.Inputs = append(v.Inputs, in)
		}
	}
	if refusal != nil {
		// A field's error shows beside its field (its description there
		// too); the others, and a refusal of no field, above them.
		v.Fields = map[string]string{}
		var others []string
		for k, msg := range refusal.Fields {
			if slices.ContainsFunc(v.Inputs, func(in views.RegistryInput) bool { return in.Key == k }) {
				v.Fields[k] = "Required."
				if msg != "Required." && !strings.HasPrefix(msg, "Required: ") {
					v.Fields[k] = msg
				}
			} else {
				others = append(others, k+": "+msg)
			}
		}
		switch {
		case len(refusal.Fields) == 0:
			v.Error = refusal.Message
		case len(others) > 0:
			slices.Sort(others)
			v.Error = strings.Join(others, "; ")
		}
	}
	return render(c, status, views.RegistryAddPage(s.page(c, "Add from the registry"), v))
}

// runsText says in words what the chosen package or remote runs.
func runsText(doc v0.ServerJSON, c registry.Choice) string {
	if c.Remote {
		return "the remote " + doc.Remotes[c.Index].URL
	}
	p := doc.Packages[c.Index]
	return p.RegistryType + " " + p.Identifier
}

// registryUpdate is the newer version the registry's copy has of the
// server added from f ("" if none, or no copy to say).
func (s *Server) registryUpdate(ctx context.Context, f *store.RegistrySource) string {
	if s.deps.Registry == nil || s.deps.Registry.Client(f.Registry) == nil {
		return ""
	}
	l, ok, err := s.deps.Registry.Find(ctx, f.Registry, f.Name)
	if err != nil || !ok || l.Latest == f.Version || registry.CompareVersions(l.Latest, f.Version) <= 0 {
		return ""
	}
	return l.Latest
}

// updateFromRegistry changes the server added from a registry to run
// version (or the latest) of the same entry, the same package or remote,
// with the arguments given then and the server's environment and headers
// as they are: its launch changes, so it waits for a person to confirm
// it (the confirmation shows what changes) before anything runs.
func (s *Server) updateFromRegistry(ctx context.Context, id, version, by string) (store.Server, error) {
	srv, err := s.deps.Store.Server(ctx, id)
	if err != nil {
		return store.Server{}, notFound(err)
	}
	f := srv.From
	switch {
	case f == nil:
		return store.Server{}, &apiError{Status: http.StatusConflict, Message: "this server was not added from a registry"}
	case s.deps.Registry == nil || s.deps.Registry.Client(f.Registry) == nil:
		return store.Server{}, &apiError{Status: http.StatusConflict, Message: "its registry " + f.Registry + " is not one this Switchboard browses now"}
	}
	if version == "" {
		version = "latest"
	}
	doc, err := s.deps.Registry.Version(ctx, f.Registry, f.Name, version)
	if errors.Is(err, registry.ErrDeleted) {
		return store.Server{}, validationError(map[string]string{"version": "the registry deleted this version: it is not updated to"})
	} else if errors.Is(err, registry.ErrNotFound) {
		return store.Server{}, &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("the registry has no %s version %s", f.Name, version),
			Fields: map[string]string{"version": "not in the registry"}}
	} else if err != nil {
		return store.Server{}, &apiError{Status: http.StatusBadGateway, Message: "the server could not be read from the registry: " + err.Error()}
	}
	l, errs := registry.LaunchOf(f.Registry, doc, registry.Choice{Index: f.Choice, Remote: f.Kind == "remote"},
		registry.Inputs{Env: srv.Env, Headers: srv.Headers, Arguments: f.Arguments})
	if len(errs) > 0 {
		return store.Server{}, validationError(errs) // the new version asks for something new
	}
	next := srv
	next.Command, next.Args, next.URL = l.Command, l.Args, l.URL
	// What the entry declares is set; what a person added by hand stays.
	next.Env, next.Headers = maps.Clone(srv.Env), maps.Clone(srv.Headers)
	if next.Env == nil {
		next.Env = map[string]string{}
	}
	if next.Headers == nil {
		next.Headers = map[string]string{}
	}
	maps.Copy(next.Env, l.Env)
	maps.Copy(next.Headers, l.Headers)
	source := l.Source
	next.From, next.UpdatedBy = &source, by
	if err := s.deps.Store.UpdateServer(ctx, next); err != nil {
		return store.Server{}, err
	}
	s.log.Info("server updated to a registry version; its launch waits for a person", "server", id, "from", f.Version, "to", doc.Version, "by", by)
	return next, nil
}

// handleAPIRegistryUpdate serves POST /api/v1/servers/:id/registry-update
// {"version": "latest"|exact}: 200 with the server, whose new launch
// waits for confirmation.
func (s *Server) handleAPIRegistryUpdate(c echo.Context) error {
	var body struct {
		Version string `json:"version"`
	}
	if err := decodeJSON(c, 4096, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	srv, err := s.updateFromRegistry(ctx, c.Param("id"), body.Version, byOf(ctx))
	if err != nil {
		return err
	}
	sum, err := s.deps.Store.Summary(ctx, srv.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.serverToJSON(ctx, sum))
}

// handleRegistryUpdateForm serves POST /servers/:id/registry-update: on
// to the confirmation of the new launch.
func (s *Server) handleRegistryUpdateForm(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.updateFromRegistry(ctx, c.Param("id"), c.FormValue("version"), byOf(ctx)); err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/servers/"+c.Param("id")+"/confirm")
}

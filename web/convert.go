package web

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/apijson"
	"github.com/switchboard-dev/switchboard/web/internal/present"
)

// serverItem merges a stored summary with the server's job in flight.
func (s *Server) serverItem(ctx context.Context, sum store.Summary) views.ServerItem {
	srv, d := sum.Server, sum.Discovery
	fresh := sum.Freshness(s.deps.Verify.DefaultTTL(), s.cfg.Now())
	item := views.ServerItem{
		ID:              srv.ID,
		Name:            srv.Name,
		Transport:       srv.Transport,
		Target:          serverconfig.Target(srv),
		Enabled:         srv.Enabled,
		NeedsConfirm:    !srv.LaunchConfirmedNow(),
		Status:          string(d.Status),
		ToolCount:       d.ToolCount,
		VerifiedAt:      d.VerifiedAt,
		LastAttemptAt:   d.LastAttemptAt,
		Fresh:           freshnessView(fresh),
		Stale:           tooOld(fresh),
		AutoRefresh:     srv.AutoRefreshOn(),
		Changed:         d.Changed,
		ProtocolVersion: d.ProtocolVersion,
		Isolation:       d.Isolation,
		ServerName:      d.ServerName,
		ServerVersion:   d.ServerVersion,
		Warnings:        d.Warnings,
		Elapsed:         time.Duration(d.DurationMS) * time.Millisecond,
	}
	for _, t := range d.Timings {
		item.Timings = append(item.Timings, views.Timing{Phase: t.Phase, MS: t.MS})
	}
	item.Fresh.Idle = fresh.State == store.FreshStale && fresh.Reason == store.StaleTTL && !item.AutoRefresh
	if d.Delta != nil {
		item.Delta = d.Delta.String()
	}
	if e := d.Error; e != nil {
		item.Error = &views.ErrorView{Class: e.Class, Phase: e.Phase, Message: e.Message, Suggestion: e.Suggestion, StderrTail: e.StderrTail, Lasting: e.Lasting}
		item.Error.RefusedHosts, item.Error.RefusedPaths = present.Refused(e.Refused)
	}
	if srv.Transport != store.TransportStdio {
		item.SignIn = s.signInView(ctx, srv.ID, d)
	}
	if f := srv.From; f != nil {
		item.From, item.UpdateTo = f.Version, s.registryUpdate(ctx, f)
	}
	if w := s.deps.Verify.Watch(srv.ID); w != nil {
		item.Watch = &views.WatchView{Connected: w.Connected, Since: w.Since, LastError: w.LastError}
	}
	if ch, ok := s.mcp.CallHealth(srv.ID); ok {
		item.Calls = (*views.CallsHealth)(&ch)
	}
	if j, ok := s.deps.Verify.Active(srv.ID); ok {
		item.Status = j.Status
		item.Phase = j.Phase
		item.Page = j.Page
		item.JobID = j.ID
		item.RunningSince = j.QueuedAt
		item.Elapsed = j.Elapsed(time.Now())
	}
	return item
}

// signInView is a remote server's sign-in as its page shows it, nil if
// there is nothing to show: the server never asked, nothing is held and
// nothing went wrong.
func (s *Server) signInView(ctx context.Context, id string, d store.Discovery) *views.SignInView {
	v := &views.SignInView{}
	if d.Status == store.StatusSignIn {
		v.Needed = true
		if e := d.Error; e != nil && e.SignIn != nil {
			v.Issuer, v.Scopes, v.Problem = e.SignIn.Issuer, e.SignIn.Scopes, e.SignIn.Problem
			v.StepUp = e.SignIn.Error == "insufficient_scope"
		}
	}
	if p, ok := s.holds.signIns.Problem(id); ok {
		v.Problem, v.NeedsClient = p.Message, p.NeedsClient
	}
	g, ok, err := s.deps.Store.LatestGrant(ctx, id)
	if err != nil {
		s.log.Error("read a server's sign-in", "server", id, "err", err)
	}
	if ok {
		v.Grant = &views.GrantView{Issuer: g.Issuer, Scope: g.Scope, ExpiresAt: g.ExpiresAt,
			Refresh: g.RefreshToken != "", Problem: g.Problem, By: g.SignedInBy, At: g.SignedInAt}
	}
	if !v.Needed && v.Grant == nil && v.Problem == "" {
		return nil
	}
	return v
}

func (s *Server) serverDetail(ctx context.Context, sum store.Summary, tools []store.ToolEntry) views.ServerDetail {
	srv := sum.Server
	d := views.ServerDetail{
		Item:          s.serverItem(ctx, sum),
		Command:       srv.Command,
		Args:          srv.Args,
		EnvKeys:       present.SortedKeys(srv.Env),
		Cwd:           srv.Cwd,
		URL:           serverconfig.MaskURL(srv.URL),
		HeaderKeys:    present.SortedKeys(srv.Headers),
		DefaultPolicy: string(srv.DefaultPolicy),
		TimeoutMS:     srv.TimeoutMS,
		MemoryMB:      srv.MemoryMB,
		Instructions:  sum.Discovery.Instructions,
		Preset:        string(srv.Preset), Presets: present.Options(store.Presets), Selections: present.Options(store.Selections),
		RecordArgs: srv.RecordArgs, Sandbox: present.Sandbox(srv, s.deps.Verify.Machine()), Asks: asksOf(srv),
	}
	for i, t := range tools {
		d.Tools = append(d.Tools, present.ToolItem(strconv.Itoa(i), t))
	}
	return d
}

// --- JSON shapes of the API (docs/architecture.md "Web, API and CLI") ---

// serverJSON is a server as the API gives it: its settings, its sign-in
// held (never a token) and its discovery record.
type serverJSON struct {
	serverconfig.JSON
	SignIn    *grantJSON     `json:"sign_in,omitempty"`
	Discovery *discoveryJSON `json:"discovery,omitempty"`
	// UpdatedBy is who last added or changed it; ConfirmedBy and
	// ConfirmedAt who confirmed its launch, and when.
	UpdatedBy   string     `json:"updated_by,omitempty"`
	ConfirmedBy string     `json:"confirmed_by,omitempty"`
	ConfirmedAt *time.Time `json:"confirmed_at,omitempty"`
	// FromRegistry is the registry entry it was added from.
	FromRegistry *store.RegistrySource `json:"from_registry,omitempty"`
}

// grantJSON is a server's sign-in as the API shows it.
type grantJSON struct {
	Issuer       string     `json:"issuer"`
	Scope        string     `json:"scope,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at"`
	RefreshToken bool       `json:"refresh_token_held"`
	SignedInAt   time.Time  `json:"refreshed_at"`
	Problem      string     `json:"problem,omitempty"`
	// SignedInBy and FirstSignedInAt are who signed in, and when.
	SignedInBy      string     `json:"signed_in_by,omitempty"`
	FirstSignedInAt *time.Time `json:"signed_in_at,omitempty"`
}

type discoveryJSON struct {
	Status        string         `json:"status"`
	Phase         string         `json:"phase,omitempty"`
	JobID         string         `json:"job_id,omitempty"`
	VerifiedAt    *time.Time     `json:"verified_at"`
	LastAttemptAt *time.Time     `json:"last_attempt_at"`
	ToolCount     int            `json:"tool_count"`
	Stale         bool           `json:"stale"`
	Freshness     apijson.Fresh  `json:"freshness"`
	Delta         *apijson.Delta `json:"delta,omitempty"`
	// Changed is how many tools, prompts, resource templates and resources
	// await approval of a new definition (the name is older than listed
	// entries).
	Changed int `json:"changed_tools"`
	// Watch is the session held to hear the server's list changes, if
	// one is.
	Watch           *apijson.Watch `json:"watch,omitempty"`
	ProtocolVersion string         `json:"protocol_version,omitempty"`
	// ListTTLMS and CacheScope are what the server's tools/list said
	// about caching it (2026-07-28's ttlMs and cacheScope).
	ListTTLMS     *int64         `json:"list_ttl_ms,omitempty"`
	CacheScope    string         `json:"cache_scope,omitempty"`
	Isolation     string         `json:"isolation,omitempty"`
	ServerName    string         `json:"server_name,omitempty"`
	ServerVersion string         `json:"server_version,omitempty"`
	Warnings      []string       `json:"warnings,omitempty"`
	Error         *apijson.Error `json:"error,omitempty"`
}

func (s *Server) serverToJSON(ctx context.Context, sum store.Summary) serverJSON {
	srv, d := sum.Server, sum.Discovery
	out := serverJSON{JSON: serverconfig.ToJSON(srv), UpdatedBy: srv.UpdatedBy, FromRegistry: srv.From}
	if l := srv.ConfirmedLaunch; l != nil && srv.LaunchConfirmedNow() {
		out.ConfirmedBy, out.ConfirmedAt = l.ConfirmedBy, apijson.TimePtr(l.ConfirmedAt)
	}
	fresh := sum.Freshness(s.deps.Verify.DefaultTTL(), s.cfg.Now())
	dj := &discoveryJSON{
		Status: string(d.Status), VerifiedAt: apijson.TimePtr(d.VerifiedAt), LastAttemptAt: apijson.TimePtr(d.LastAttemptAt),
		ToolCount: d.ToolCount, Stale: tooOld(fresh), Freshness: apijson.FreshOf(fresh), Delta: apijson.DeltaOf(d.Delta),
		Changed: d.Changed, Watch: apijson.WatchOf(s.deps.Verify.Watch(srv.ID)), ProtocolVersion: d.ProtocolVersion, Isolation: d.Isolation,
		ListTTLMS: d.ListTTLMS, CacheScope: d.CacheScope,
		ServerName: d.ServerName, ServerVersion: d.ServerVersion, Warnings: d.Warnings,
	}
	if e := d.Error; e != nil {
		dj.Error = &apijson.Error{Class: e.Class, Phase: e.Phase, Message: e.Message, Suggestion: e.Suggestion, StderrTail: e.StderrTail, SignIn: e.SignIn, Lasting: e.Lasting, Refused: e.Refused}
	}
	if srv.Transport != store.TransportStdio {
		if g, ok, err := s.deps.Store.LatestGrant(ctx, srv.ID); err == nil && ok {
			out.SignIn = &grantJSON{Issuer: g.Issuer, Scope: g.Scope, ExpiresAt: apijson.TimePtr(g.ExpiresAt),
				RefreshToken: g.RefreshToken != "", SignedInAt: g.SavedAt, Problem: g.Problem,
				SignedInBy: g.SignedInBy, FirstSignedInAt: apijson.TimePtr(g.SignedInAt)}
		}
	}
	if j, ok := s.deps.Verify.Active(srv.ID); ok {
		dj.Status, dj.Phase, dj.JobID = j.Status, j.Phase, j.ID
	}
	out.Discovery = dj
	return out
}

type toolJSON struct {
	Server string `json:"server"`
	// Freshness is the server's (catalog reads only).
	Freshness       *apijson.Fresh  `json:"freshness,omitempty"`
	Name            string          `json:"name"`
	AgentName       string          `json:"agent_name"`
	Title           string          `json:"title,omitempty"`
	Description     string          `json:"description,omitempty"`
	InputSchema     json.RawMessage `json:"input_schema,omitempty"`
	Annotations     json.RawMessage `json:"annotations,omitempty"`
	State           store.ToolState `json:"state"`
	Problems        []string        `json:"problems,omitempty"`
	Needs           []string        `json:"needs,omitempty"`
	Policy          store.Policy    `json:"policy"`
	PolicyReason    string          `json:"policy_reason,omitempty"`
	PolicySetBy     string          `json:"policy_set_by,omitempty"`
	EffectivePolicy store.Policy    `json:"effective_policy"`
	Pin             string          `json:"pin"`
}

func toolToJSON(t store.ToolEntry) toolJSON {
	return toolJSON{
		Server: t.ServerID, Name: t.Name, AgentName: present.OfferedName(t),
		Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations,
		State: t.State, Problems: t.Problems, Needs: t.Needs, Policy: t.Policy.Policy, PolicyReason: t.Policy.Reason, PolicySetBy: t.Policy.SetBy,
		EffectivePolicy: t.Effective, Pin: t.Pin,
	}
}

func toolsToJSON(es []store.ToolEntry) []toolJSON {
	out := make([]toolJSON, 0, len(es))
	for _, e := range es {
		out = append(out, toolToJSON(e))
	}
	return out
}

// asksOf is what srv may ask of the calling agents, as its page shows it.
func asksOf(srv store.Server) []views.AskRow {
	out := make([]views.AskRow, 0, len(store.AskKinds))
	for _, kind := range store.AskKinds {
		out = append(out, views.AskRow{Kind: kind, Policy: string(srv.Asks.Of(kind))})
	}
	return out
}

// Package present turns the domain's values (a stored server, its
// tools, a launch, an import plan) into the models the pages (views)
// render; nothing in it reads or writes anything.
package present

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/sandbox"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// ToolItem builds a tool row. key is an opaque id for the row's element;
// the tool's name never becomes an id, selector or URL.
func ToolItem(key string, t store.ToolEntry) views.ToolItem {
	item := views.ToolItem{
		Key:          key,
		ServerID:     t.ServerID,
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		State:        string(t.State),
		Problems:     t.Problems,
		Policy:       string(t.Policy.Policy),
		PolicyReason: t.Policy.Reason, PolicySetBy: t.Policy.SetBy,
		Effective: string(t.Effective),
		AgentName: OfferedName(t),
	}
	if len(t.Needs) > 0 {
		item.Needs = discovery.NeedsText(t.Needs)
	}
	if len(t.InputSchema) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, t.InputSchema, "", "  ") == nil {
			item.InputSchema = buf.String()
		} else {
			item.InputSchema = string(t.InputSchema)
		}
	}
	var ann map[string]json.RawMessage
	if json.Unmarshal(t.Annotations, &ann) == nil {
		for _, k := range SortedKeys(ann) {
			item.Annotations = append(item.Annotations, views.Annotation{Key: k, Value: string(ann[k])})
		}
	}
	return item
}

// sortedKeys returns the map's keys in order.

// ServerForm fills the edit form from a stored server. Secret values
// are not sent to the browser; rows only say they are set.
func ServerForm(s store.Server) views.ServerForm {
	f := views.ServerForm{
		ID:            s.ID,
		Name:          s.Name,
		Transport:     s.Transport,
		Command:       s.Command,
		Args:          strings.Join(s.Args, "\n"),
		Cwd:           s.Cwd,
		URL:           serverconfig.MaskURL(s.URL),
		DefaultPolicy: string(s.DefaultPolicy),
		Enabled:       s.Enabled,
	}
	_, f.MemoryMB, f.TTLSeconds, f.AutoRefresh = serverconfig.SettingsText(s)
	f.TimeoutS = serverconfig.Seconds(s.TimeoutMS)
	for _, k := range SortedKeys(s.Env) {
		f.Env = append(f.Env, views.KV{Key: k, Set: true})
	}
	for _, k := range SortedKeys(s.Headers) {
		f.Headers = append(f.Headers, views.KV{Key: k, Set: true})
	}
	oc := s.OAuthSettings()
	f.OAuthClientID, f.OAuthClientSecretSet, f.OAuthScopes = oc.ClientID, oc.ClientSecret != "", strings.Join(oc.Scopes, " ")
	if sb := serverconfig.Sandbox(s); sb != nil {
		FillSandbox(&f, *sb)
	}
	return f
}

// FillSandbox puts a profile in the form's walls fields.
func FillSandbox(f *views.ServerForm, sb store.Sandbox) {
	lines := serverconfig.SandboxLines
	f.SandboxFiles, f.SandboxNetwork, f.SandboxRunner = sb.Files, sb.Network, sb.Runner
	f.SandboxAllow, f.SandboxRead, f.SandboxWrite, f.SandboxDeny = lines(sb.Allow), lines(sb.Read), lines(sb.Write), lines(sb.Deny)
	f.SandboxSkip = lines(sb.SkipArgPaths)
	if sb.CPUPercent > 0 {
		f.SandboxCPU = strconv.Itoa(sb.CPUPercent)
	}
	if sb.Processes > 0 {
		f.SandboxProcesses = strconv.Itoa(sb.Processes)
	}
	f.SandboxWeaker, f.SandboxOff = sb.Weaker, sb.Off
}

// Launch is what the confirmation shows: everything that decides what
// runs, in full, secret values left out, with the walls machine m
// builds.
func Launch(srv store.Server, m sandbox.Machine) views.Launch {
	l := views.Launch{
		ServerID: srv.ID, Name: srv.Name, Transport: srv.Transport,
		Hash: srv.LaunchHash(), Changed: srv.LaunchConfirmed != "" && !srv.LaunchConfirmedNow(),
		Presets: Options(store.Presets), Preset: string(srv.Preset), DefaultPolicy: string(srv.DefaultPolicy),
	}
	if srv.Preset == "" { // the preset closest to the default policy, never looser
		l.Preset = map[store.Policy]string{store.PolicyAsk: string(store.PresetAskAll), store.PolicyAllow: string(store.PresetReadOnly)}[srv.DefaultPolicy]
	}
	if l.Changed && srv.ConfirmedLaunch != nil {
		l.Changes, l.ChangesKnown = LaunchChanges(*srv.ConfirmedLaunch, srv), true
	}
	if f := srv.From; f != nil && f.Held != "" {
		// The same launch ran another artifact than the one recorded: old
		// and new side by side.
		l.Changes = append(l.Changes, views.LaunchChange{What: "What it ran", Change: "changed", Old: f.Artifact, New: f.Held})
		l.Changed, l.ChangesKnown = true, true
	}
	if srv.Transport == store.TransportStdio {
		l.CommandLine = serverconfig.CommandLine(srv.Command, srv.Args)
		l.Command, l.Args, l.Cwd, l.EnvKeys = srv.Command, srv.Args, srv.Cwd, SortedKeys(srv.Env)
		l.MemoryMB = srv.MemoryMB
		if l.Sandbox = Sandbox(srv, m); l.Sandbox != nil {
			l.Sandbox.ServerID, l.Sandbox.Choose = srv.ID, true // a person confirming picks the paths granted
		}
	} else {
		l.URL, l.HeaderKeys = serverconfig.MaskURL(srv.URL), SortedKeys(srv.Headers)
	}
	return l
}

// Options are choices as pages offer them: the presets, the bulk
// policy selections.
func Options[T interface {
	~string
	Title() string
}](list []T) []views.Option {
	out := make([]views.Option, 0, len(list))
	for _, v := range list {
		out = append(out, views.Option{Value: string(v), Title: v.Title()})
	}
	return out
}

// ImportPlan is an import plan as the Import page shows it.
func ImportPlan(p serverconfig.ImportPlan) *views.ImportPlanView {
	counts := p.Counts()
	v := &views.ImportPlanView{Format: p.Format, Warnings: p.Warnings, Add: counts[serverconfig.ImportAdd],
		Update: counts[serverconfig.ImportUpdate], Same: counts[serverconfig.ImportSame], Errors: counts[serverconfig.ImportError]}
	for i, r := range p.Rows {
		row := views.ImportRowView{Index: i, Fingerprint: r.Fingerprint, Name: r.Name, ID: r.ID, Action: r.Action, Choice: r.Choice, NewID: r.NewID,
			Line: r.Line, Col: r.Col, Target: r.Target, Secrets: r.Secrets, Refs: r.Refs, Notes: r.Notes, Errors: r.Errors}
		for _, d := range r.Diff {
			row.Diff = append(row.Diff, views.FieldChange{Field: d.Field, Old: d.Old, New: d.New})
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// SortedKeys is m's keys in order.
func SortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// OfferedName is the name agents know the tool by, or "" for a tool that
// is never offered to them as it is (flagged: see store.ToolState.Flagged).
func OfferedName(t store.ToolEntry) string {
	if t.State.Flagged() {
		return ""
	}
	return t.AgentName
}

// Flags are why a tool's definition needs a second look before it is
// approved: the prompt-injection markers in its title and description,
// and whether its name, title or description hides characters. They are
// what the server page flags, and the review of a change shows them too.
type Flags struct {
	Markers []string
	Hidden  bool
}

// Any reports whether anything is flagged.
func (f Flags) Any() bool { return len(f.Markers) > 0 || f.Hidden }

// String says what is flagged, for a refusal.
func (f Flags) String() string {
	var parts []string
	if len(f.Markers) > 0 {
		parts = append(parts, "possible prompt injection ("+strings.Join(f.Markers, ", ")+")")
	}
	if f.Hidden {
		parts = append(parts, "hidden characters")
	}
	return strings.Join(parts, " and ")
}

// FlagsOf is t's flags.
func FlagsOf(t store.Tool) Flags {
	var f Flags
	f.Markers, f.Hidden = views.DefinitionFlags(t.Name, t.Title, t.Description)
	return f
}

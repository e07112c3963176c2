// What a verification's outcome becomes in the store: the one place where
// discovery's words (error classes, tool states, timings) meet the
// store's, since the two packages never import each other.

package verify

import (
	"errors"
	"log/slog"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

// Status is how the store records a verification that ended with e: the
// one mapping from error classes to statuses.
func statusOf(e *discovery.Error) store.Status {
	switch e.Class {
	case discovery.ClassTimeout:
		return store.StatusTimeout
	case discovery.ClassCancelled:
		return store.StatusCancelled
	case discovery.ClassAuth:
		return store.StatusSignIn
	}
	return store.StatusFailed
}

// toolStates maps the states discovery flags tools with to the store's.
var toolStates = map[discovery.ToolState]store.ToolState{
	discovery.ToolOversized: store.ToolOversized, discovery.ToolInvalid: store.ToolInvalid, discovery.ToolUnsupported: store.ToolUnsupported,
}

// Failure is the store's record of job j, which ended with e at now.
// Its messages are redacted once more (see message): what is stored
// reaches backups and every replica.
func failureOf(j discovery.Job, e *discovery.Error, now time.Time) store.Failure {
	return store.Failure{
		JobID: j.ID, Trigger: j.Trigger, ConfigHash: j.ConfigHash, Status: statusOf(e), StartedAt: startOf(j), FinishedAt: now,
		Timings: timings(j.Timings),
		Error: store.VerifyError{Class: e.Class, Phase: e.Phase, Message: message(e.Message),
			Suggestion: e.Suggestion, StderrTail: e.StderrTail, SignIn: signInNeed(e), Lasting: e.Lasting(),
			Refused: refused(e.Refused)},
	}
}

// message is an error's message as it is stored and logged: the values
// of OAuth credential parameters taken out (oauth.RedactParams).
// discovery has redacted the secret values it knew (the OAuth client, a
// grant's tokens and client secret, before its error left it); record
// has not the values, so this takes out by their form what reached a
// message by another way, such as a token endpoint's echo of its request.
func message(s string) string { return oauth.RedactParams(s) }

// refused is the store's record of what a run's walls refused.
func refused(r *discovery.Refused) *store.Refused {
	if r.Empty() {
		return nil
	}
	out := &store.Refused{Paths: r.Paths}
	for _, h := range r.Hosts {
		out.Hosts = append(out.Hosts, store.RefusedHost{Host: h.Host, Port: h.Port, Reason: h.Reason})
	}
	return out
}

// Success is the store's record of job j, which found res, at now.
func successOf(j discovery.Job, res *discovery.Result, now time.Time) store.Verification {
	v := store.Verification{
		JobID: j.ID, Trigger: j.Trigger, ConfigHash: j.ConfigHash, StartedAt: startOf(j), FinishedAt: now,
		Timings: timings(res.Timings), ProtocolVersion: res.ProtocolVersion, Isolation: res.Isolation,
		ListTTLMS: listTTLMS(res.ListTTL), CacheScope: res.CacheScope,
		ServerName: res.ServerName, ServerVersion: res.ServerVersion, Capabilities: res.Capabilities,
		Instructions: res.Instructions, Warnings: res.Warnings,
	}
	for _, t := range res.Tools {
		markers, hidden := views.DefinitionFlags(t.Name, t.Title, t.Description)
		v.Tools = append(v.Tools, store.Tool{
			Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			OutputSchema: t.OutputSchema, Annotations: t.Annotations, Raw: t.Raw, Pin: t.Pin,
			State: toolStates[t.State], Problems: t.Problems, Needs: t.Needs, Marked: len(markers) > 0 || hidden,
		})
	}
	v.Listed, v.Unlisted = listed(res)
	return v
}

// unlistedKinds are the store's kinds of the lists discovery walks
// beside tools/list.
var unlistedKinds = map[string]store.ListedKind{
	"resources/list": store.KindResource, "resources/templates/list": store.KindResourceTemplate, "prompts/list": store.KindPrompt,
}

// listed maps res's resources, resource templates and prompts, and the
// kinds whose listing failed, to the store's.
func listed(res *discovery.Result) ([]store.Listed, []store.ListedKind) {
	var out []store.Listed
	entry := func(l store.Listed, e discovery.Entry) {
		l.Raw, l.Pin, l.State, l.Problems = e.Raw, e.Pin, toolStates[e.State], e.Problems
		out = append(out, l)
	}
	for _, r := range res.Resources {
		entry(store.Listed{Kind: store.KindResource, Key: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
			MIMEType: r.MIMEType, Size: r.Size, Annotations: r.Annotations}, r.Entry)
	}
	for _, r := range res.ResourceTemplates {
		entry(store.Listed{Kind: store.KindResourceTemplate, Key: r.URITemplate, Name: r.Name, Title: r.Title,
			Description: r.Description, MIMEType: r.MIMEType, Annotations: r.Annotations}, r.Entry)
	}
	for _, p := range res.Prompts {
		l := store.Listed{Kind: store.KindPrompt, Key: p.Name, Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			l.Arguments = append(l.Arguments, store.PromptArgument(a))
		}
		entry(l, p.Entry)
	}
	var unlisted []store.ListedKind
	for _, m := range res.Unlisted {
		unlisted = append(unlisted, unlistedKinds[m])
	}
	return out, unlisted
}

// Discarded is the job's outcome when the store refused to record it
// because the server changed or went away meanwhile, or nil.
func discarded(err error) *discovery.Error {
	switch {
	case errors.Is(err, store.ErrConfigChanged):
		return discovery.NewError(discovery.ClassCancelled, discovery.PhaseSaving, "the server's configuration changed while it was being verified; the result was discarded")
	case errors.Is(err, store.ErrNotFound):
		return discovery.NewError(discovery.ClassCancelled, discovery.PhaseSaving, "the server was deleted while it was being verified")
	}
	return nil
}

// signInNeed is what a verification that ended auth_required found
// about signing in (nil for another error).
func signInNeed(e *discovery.Error) *store.SignInNeed {
	if e.Class != discovery.ClassAuth || e.Auth == nil {
		return nil
	}
	need := &store.SignInNeed{Status: e.Auth.Status, Error: e.Auth.Error, Scope: e.Auth.Scope,
		ResourceMetadata: e.Auth.ResourceMetadata, Problem: message(e.SignInProblem)}
	if p := e.SignIn; p != nil {
		need.Issuer, need.Scopes = p.Server.Issuer, p.Scopes
	}
	return need
}

func startOf(j discovery.Job) time.Time {
	if j.StartedAt.IsZero() {
		return j.QueuedAt
	}
	return j.StartedAt
}

func timings(ts []discovery.Timing) []store.PhaseTiming {
	out := make([]store.PhaseTiming, 0, len(ts))
	for _, t := range ts {
		out = append(out, store.PhaseTiming{Phase: t.Phase, MS: t.Duration.Milliseconds()})
	}
	return out
}

// listTTLMS is a list TTL as the store keeps it: milliseconds, nil if
// the server gave none.
func listTTLMS(ttl *time.Duration) *int64 {
	if ttl == nil {
		return nil
	}
	ms := ttl.Milliseconds()
	return &ms
}

// Log writes the one line of a finished verification to log, given the
// job's events: which server, how it ended, how many tools, how long it
// took, what asked for it, and for a failure its class, phase and
// message (redacted as stored: see message). Events of a job still
// going, and the later event of warnings that came after it ended, write
// none.
func logJob(log *slog.Logger, j discovery.Job) {
	if !j.Done() || len(j.LateWarnings) > 0 {
		return
	}
	attrs := []any{"server", j.ServerID, "outcome", j.Status, "tools", j.ToolCount,
		"duration", j.FinishedAt.Sub(startOf(j)).Round(time.Millisecond).String(), "trigger", j.Trigger}
	if e := j.Error; e != nil {
		attrs = append(attrs, "class", e.Class, "phase", e.Phase, "err", message(e.Message))
	}
	if j.Error == nil {
		log.Info("verified", attrs...)
		return
	}
	log.Warn("verification did not succeed", attrs...)
}

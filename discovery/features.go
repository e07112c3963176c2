package discovery

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Tools a server lists only to a client that can answer what they ask.
// A server may register a tool only when its client declares the
// feature the tool needs: server-everything lists trigger-sampling-request
// only to a client that declares sampling, get-roots-list only to one
// that declares roots. A verification asks nothing (its client declares
// no feature), so it would never see them; yet an agent that declares the
// feature gets a session that does (see Target.Asks), and could call
// them. So a verification also lists the tools as a client declaring
// every feature sees them, on a connection of its own (a server of a
// revision before 2026-07-28 decides what it lists once per session),
// started once the plain one has finished its handshake and run beside
// the rest of it; it keeps the tools the plain listing did not have, each
// with what it needs (Tool.Needs): the features under which it is
// listed, found by listing once for each feature alone. A server that
// does not start, or does not answer its handshake, is never started a
// second time.

// The features a tool may need, as Tool.Needs names them.
const (
	FeatureSampling       = "sampling"        // sampling/createMessage
	FeatureElicitation    = "elicitation"     // elicitation/create, form mode
	FeatureURLElicitation = "url-elicitation" // elicitation/create, URL mode
	FeatureRoots          = "roots"           // roots/list
)

// PhaseAskTools is a verification's phase while it waits for the tools
// listed only to a client that declares features (see features.go).
const PhaseAskTools = "listing tools that ask agents"

// features are each feature alone, as Asks declaring it.
var features = []struct {
	name string
	asks Asks
}{
	{FeatureSampling, Asks{Sampling: true}},
	{FeatureElicitation, Asks{Elicitation: true}},
	{FeatureURLElicitation, Asks{URLElicitation: true}},
	{FeatureRoots, Asks{Roots: true}},
}

// everyFeature declares them all.
var everyFeature = Asks{Sampling: true, Elicitation: true, URLElicitation: true, Roots: true}

// has reports whether a declares the feature named f.
func (a Asks) has(f string) bool {
	for _, ft := range features {
		if ft.name == f {
			return ft.asks.Sampling && a.Sampling || ft.asks.Elicitation && a.Elicitation ||
				ft.asks.URLElicitation && a.URLElicitation || ft.asks.Roots && a.Roots
		}
	}
	return false
}

// Serves reports whether a session declaring a may be offered a tool
// that needs needs (Tool.Needs): one with no needs always; else one whose
// alternatives (each one or more features joined by "+") a declares one
// of in full.
func (a Asks) Serves(needs []string) bool {
	if len(needs) == 0 {
		return true
	}
	for _, alt := range needs {
		all := true
		for f := range strings.SplitSeq(alt, "+") {
			all = all && a.has(f)
		}
		if all {
			return true
		}
	}
	return false
}

// NeedsText says what needs (Tool.Needs) asks of an agent, for a
// person: "an agent that answers sampling", "… form elicitation or URL
// elicitation".
func NeedsText(needs []string) string {
	alts := make([]string, len(needs))
	for i, alt := range needs {
		fs := strings.Split(alt, "+")
		for j, f := range fs {
			fs[j] = featureText[f]
			if fs[j] == "" {
				fs[j] = f
			}
		}
		alts[i] = strings.Join(fs, " and ")
	}
	return "an agent that answers " + strings.Join(alts, " or ")
}

// featureText names the features for a person.
var featureText = map[string]string{
	FeatureSampling: "sampling", FeatureElicitation: "form elicitation",
	FeatureURLElicitation: "URL elicitation", FeatureRoots: "roots",
}

// askListing is a listing of a server's tools by a client declaring
// asks: its tools, or why it failed.
type askListing struct {
	tools []Tool
	err   error
}

// askRun is a listing of t's tools as a client declaring asks sees them
// (see listAsking), running.
type askRun struct {
	listed chan askListing // its outcome, as soon as it is known
	ended  chan struct{}   // closed once its server is stopped
	// killed and left are what its stop found of processes that left
	// its server's group (see process.escapeReport), set before ended
	// is closed.
	killed, left []int
}

// listAsking starts listing the target's tools as a client declaring
// asks sees them: a verification of its own that lists nothing else and
// reports no phases. Its outcome comes as soon as the tools are listed,
// before its server is stopped (which the run's caller waits for on
// ended, as Verify waits for its own server).
func (r *verification) listAsking(ctx context.Context, asks Asks) *askRun {
	t := r.target
	t.Asks = asks
	a := &askRun{listed: make(chan askListing, 1), ended: make(chan struct{})}
	run := &verification{v: r.v, limits: r.limits, target: t, start: time.Now(), rec: &recorder{}, askOnly: true,
		early: func(res *Result) { a.listed <- askListing{tools: res.Tools} }}
	go func() {
		defer close(a.ended)
		if _, err := run.do(ctx); err != nil {
			e, _, _ := run.failure(ctx, err)
			a.listed <- askListing{err: run.shown(e)}
		}
		if run.proc != nil {
			a.killed, a.left = run.proc.escapeReport()
		}
	}()
	return a
}

// addAskTools adds to res the tools the listing with every feature
// found that res's plain listing did not, each with what it needs (a
// listing for each feature alone decides it: a tool none of them lists
// needs all of them). A listing that fails only costs a warning: the
// plain listing stands.
func (r *verification) addAskTools(ctx context.Context, res *Result, all askListing) {
	if all.err != nil {
		res.Warnings = append(res.Warnings, "could not list the tools offered only to clients that answer what a server asks: "+cutText(all.err.Error(), 300))
		return
	}
	plain := make(map[string]string, len(res.Tools)) // pins by name
	for _, t := range res.Tools {
		plain[t.Name] = t.Pin
	}
	var extra []Tool
	var differ []string
	for _, t := range all.tools {
		pin, listed := plain[t.Name]
		switch {
		case !listed:
			extra = append(extra, t)
		case pin != t.Pin:
			differ = append(differ, t.Name)
		}
	}
	if len(differ) > 0 {
		// Its calls go to a session that declares what the agent
		// declared: the definition an agent gets may not be the one
		// reviewed.
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d tools are defined differently to a client that answers what a server asks (e.g. %q): the definition kept is the one every client gets, and calls of them go as every client's, so the server cannot ask during them", len(differ), cutText(differ[0], 64)))
	}
	if len(extra) == 0 {
		return
	}
	if room := r.limits.MaxTools - len(res.Tools); len(extra) > room {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d tools listed only to clients that answer what a server asks are left out: the server would list more than %d tools", len(extra)-max(room, 0), r.limits.MaxTools))
		extra = extra[:max(room, 0)]
	}
	if r.v.needs.known(r.target, extra) { // as a verification found them before
		res.Tools = append(res.Tools, extra...)
		return
	}
	runs := make([]*askRun, len(features))
	for i, f := range features {
		runs[i] = r.listAsking(ctx, f.asks)
		r.askRuns = append(r.askRuns, runs[i])
	}
	alone := make([]askListing, len(features))
	for i, run := range runs {
		alone[i] = <-run.listed
	}
	for i := range extra {
		for j, f := range features {
			if alone[j].err == nil && slices.ContainsFunc(alone[j].tools, func(t Tool) bool { return t.Name == extra[i].Name }) {
				extra[i].Needs = append(extra[i].Needs, f.name)
			}
		}
		if len(extra[i].Needs) == 0 {
			names := make([]string, len(features))
			for j, f := range features {
				names[j] = f.name
			}
			extra[i].Needs = []string{strings.Join(names, "+")}
		}
	}
	failed := false
	for j, f := range features {
		if alone[j].err != nil {
			failed = true
			res.Warnings = append(res.Warnings, fmt.Sprintf("could not list the tools offered to clients that answer %s alone (the tools that need it are offered only to agents that answer every kind): %s", f.name, cutText(alone[j].err.Error(), 300)))
		}
	}
	if !failed {
		r.v.needs.keep(r.target, extra)
	}
	res.Tools = append(res.Tools, extra...)
}

// needsCache remembers, by server and tool (its definition's pin), what
// each tool a server lists only to clients that answer needs, as the
// listings per feature found it: the next verification of the server
// lists once with every feature declared, and runs the four listings per
// feature again only for a tool it does not know (a new one, or one whose
// definition changed). It is bounded: past maxKnownNeeds, it forgets all.
type needsCache struct {
	mu sync.Mutex
	m  map[string][]string
}

// maxKnownNeeds bounds the tools needsCache remembers.
const maxKnownNeeds = 4096

// needsKey names tool of the server t reaches: how it is started or
// reached (not its secrets), and the tool's name and pin.
func needsKey(t Target, tool Tool) string {
	h := sha256.New()
	for _, part := range append([]string{t.Transport, t.Command, t.Cwd, t.URL, tool.Name, tool.Pin}, t.Args...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return string(h.Sum(nil))
}

// known sets the needs of every tool of extra and reports true if it
// knows them all; else it sets none.
func (c *needsCache) known(t Target, extra []Tool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	needs := make([][]string, len(extra))
	for i, tool := range extra {
		n, ok := c.m[needsKey(t, tool)]
		if !ok {
			return false
		}
		needs[i] = n
	}
	for i := range extra {
		extra[i].Needs = slices.Clone(needs[i])
	}
	return true
}

// keep remembers the needs of the tools of extra.
func (c *needsCache) keep(t Target, extra []Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(extra) > maxKnownNeeds {
		c.m = map[string][]string{}
	}
	for _, tool := range extra {
		c.m[needsKey(t, tool)] = slices.Clone(tool.Needs)
	}
}

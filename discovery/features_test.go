package discovery

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// A tool a server lists only to a client declaring a feature is found by
// Verify, with what it needs; a server listing everything to everyone
// gets no needs at all.
func TestVerifyFindsToolsListedOnlyToAgentsThatAnswer(t *testing.T) {
	want := map[string][]string{
		"ask_model":    {FeatureSampling},
		"ask_person":   {FeatureElicitation},
		"ask_url":      {FeatureURLElicitation},
		"list_roots":   {FeatureRoots},
		"sample_roots": {"sampling+elicitation+url-elicitation+roots"},
		"log_steps":    nil,
	}
	for name, target := range map[string]func(t *testing.T) Target{
		"stdio":        func(*testing.T) Target { return fixtureTarget("asks", "-gated") },
		"stdio legacy": func(*testing.T) Target { return fixtureTarget("asks", "-gated", "-legacy") },
		"http":         remoteTarget(TransportHTTP, "-mode", "asks", "-gated"),
		"http legacy":  remoteTarget(TransportHTTP, "-mode", "asks", "-gated", "-legacy"),
	} {
		t.Run(name, func(t *testing.T) {
			var phases []string
			res, err := NewVerifier(Limits{}, nil).Verify(context.Background(), target(t), 0, func(p Progress) {
				phases = append(phases, p.Phase)
			})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, tool := range res.Tools {
				got[tool.Name] = tool.Needs
			}
			for tool, needs := range want {
				have, listed := got[tool]
				if !listed {
					t.Errorf("%s not listed; tools: %v", tool, toolNames(res.Tools))
					continue
				}
				if !slices.Equal(have, needs) {
					t.Errorf("%s needs %q, want %q", tool, have, needs)
				}
			}
			if !slices.Contains(phases, PhaseAskTools) {
				t.Errorf("phases %v lack %q", phases, PhaseAskTools)
			}
			if len(res.Warnings) > 0 {
				t.Errorf("warnings: %q", res.Warnings)
			}
		})
	}
	t.Run("ungated", func(t *testing.T) {
		res, err := NewVerifier(Limits{}, nil).Verify(context.Background(), fixtureTarget("asks"), 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Needs != nil {
				t.Errorf("%s needs %q: the server lists it to every client", tool.Name, tool.Needs)
			}
		}
		if !slices.ContainsFunc(res.Tools, func(t Tool) bool { return t.Name == "ask_model" }) {
			t.Errorf("ask_model not listed: %v", toolNames(res.Tools))
		}
	})
}

// A listing with features that fails costs a warning, never the
// verification: the plain listing stands.
func TestAFailedListingWithFeaturesOnlyWarns(t *testing.T) {
	v := NewVerifier(Limits{}, nil)
	r := &verification{v: v, limits: v.limits}
	res := &Result{Tools: []Tool{{Name: "a"}}}
	r.addAskTools(context.Background(), res, askListing{err: &Error{Class: ClassExited, Message: "server exited"}})
	if len(res.Tools) != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "server exited") {
		t.Fatalf("tools %v, warnings %q", toolNames(res.Tools), res.Warnings)
	}
}

// A tool the listing with features defines differently from the plain
// one keeps the plain definition, with a warning.
func TestAToolDefinedDifferentlyToAnsweringClientsIsWarnedOf(t *testing.T) {
	v := NewVerifier(Limits{}, nil)
	r := &verification{v: v, limits: v.limits}
	res := &Result{Tools: []Tool{{Name: "a", Pin: "1"}}}
	r.addAskTools(context.Background(), res, askListing{tools: []Tool{{Name: "a", Pin: "2"}}})
	if len(res.Tools) != 1 || res.Tools[0].Pin != "1" || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `defined differently to a client that answers what a server asks (e.g. "a")`) {
		t.Fatalf("tools %+v, warnings %q", res.Tools, res.Warnings)
	}
}

func TestAsksServeWhatAToolNeeds(t *testing.T) {
	for _, c := range []struct {
		asks  Asks
		needs []string
		want  bool
	}{
		{Asks{}, nil, true},
		{Asks{}, []string{FeatureSampling}, false},
		{Asks{Sampling: true}, []string{FeatureSampling}, true},
		{Asks{Roots: true}, []string{FeatureSampling}, false},
		{Asks{URLElicitation: true}, []string{FeatureElicitation, FeatureURLElicitation}, true},
		{Asks{Sampling: true}, []string{"sampling+roots"}, false},
		{Asks{Sampling: true, Roots: true}, []string{"sampling+roots"}, true},
		{everyFeature, []string{"nonsense"}, false},
	} {
		if got := c.asks.Serves(c.needs); got != c.want {
			t.Errorf("%+v serves %q: %v, want %v", c.asks, c.needs, got, c.want)
		}
	}
	if got := NeedsText([]string{FeatureElicitation, FeatureURLElicitation, "sampling+roots"}); got != "an agent that answers form elicitation or URL elicitation or sampling and roots" {
		t.Errorf("NeedsText = %q", got)
	}
}

func toolNames(tools []Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

// A prompt whose 2026-07-28 server answers input_required fails with
// ErrInputRequired, not as a failure of the server: mcp-go's client
// retries a prompt or a read with the answers of its own handlers, and a
// session declaring nothing has none (an assumption about mcp-go's error,
// see inputNotAnswered). (A 2025-era server asks with a request of its
// own, which the session refuses, naming it; the server's error says so.)
func TestMCPGoFailsUnansweredInput(t *testing.T) {
	s, err := NewVerifier(Limits{}, nil).Open(context.Background(), fixtureTarget("normal", "-tools", "1", "-conformance"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.GetPrompt(context.Background(), "test_input_required_result_prompt", nil, 0)
	if !errors.Is(err, ErrInputRequired) {
		t.Errorf("GetPrompt = %v; want ErrInputRequired", err)
	}
}

// A second verification of a server knows what its tools that ask need:
// it lists once with every feature declared, not once more per feature,
// unless a tool is new or its definition changed.
func TestKnownNeedsAreNotListedAgain(t *testing.T) {
	v := NewVerifier(Limits{}, nil)
	target := fixtureTarget("asks", "-gated")
	verify := func() (*Result, []string) {
		var phases []string
		res, err := v.Verify(context.Background(), target, 0, func(p Progress) { phases = append(phases, p.Phase) })
		if err != nil {
			t.Fatal(err)
		}
		return res, phases
	}
	first, _ := verify()
	if len(v.needs.m) == 0 {
		t.Fatal("the first verification remembered no needs")
	}
	// Mark what it remembered: the next verification gives the marks, not
	// what listing once per feature again would find.
	for k := range v.needs.m {
		v.needs.m[k] = []string{"remembered"}
	}
	second, _ := verify()
	for _, tool := range second.Tools {
		if tool.Needs != nil && !slices.Equal(tool.Needs, []string{"remembered"}) {
			t.Errorf("%s needs %q on the second verification; want what the first remembered", tool.Name, tool.Needs)
		}
	}
	if len(first.Tools) != len(second.Tools) {
		t.Errorf("%d tools, then %d", len(first.Tools), len(second.Tools))
	}
}

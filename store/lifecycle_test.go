package store_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

func TestInitialPolicy(t *testing.T) {
	tests := []struct {
		def         store.Policy
		annotations string
		want        store.Policy
		raised      bool
	}{
		// No hints: the spec's defaults (destructive, open world) apply.
		{store.PolicyAllow, ``, store.PolicyAsk, true},
		{store.PolicyAllow, `{}`, store.PolicyAsk, true},
		{store.PolicyAllow, `not json`, store.PolicyAsk, true},
		{store.PolicyAllow, `{"readOnlyHint":true}`, store.PolicyAsk, true},                          // still open world
		{store.PolicyAllow, `{"destructiveHint":false}`, store.PolicyAsk, true},                      // still open world
		{store.PolicyAllow, `{"openWorldHint":false}`, store.PolicyAsk, true},                        // still destructive
		{store.PolicyAllow, `{"destructiveHint":true,"openWorldHint":false}`, store.PolicyAsk, true}, // destructive
		{store.PolicyAllow, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyAllow, false},
		{store.PolicyAllow, `{"destructiveHint":false,"openWorldHint":false}`, store.PolicyAllow, false},
		{store.PolicyAllow, `{"readOnlyHint":true,"destructiveHint":true,"openWorldHint":false}`, store.PolicyAllow, false}, // read-only wins
		// Never looser than the server's default.
		{store.PolicyAsk, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyAsk, false},
		{store.PolicyDeny, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyDeny, false},
		{store.PolicyDeny, `{"destructiveHint":true}`, store.PolicyDeny, false},
		{store.PolicyAsk, `{"destructiveHint":true}`, store.PolicyAsk, false},
	}
	for _, tt := range tests {
		got, reason := store.InitialPolicy(tt.def, json.RawMessage(tt.annotations))
		if got != tt.want {
			t.Errorf("store.InitialPolicy(%s, %s) = %s (%s); want %s", tt.def, tt.annotations, got, reason, tt.want)
		}
		if raised := strings.Contains(reason, "(raised from "); raised != tt.raised || !strings.HasPrefix(reason, string(got)+": ") {
			t.Errorf("store.InitialPolicy(%s, %s) reason = %q; want raised=%v", tt.def, tt.annotations, reason, tt.raised)
		}
	}
}

func TestFreshness(t *testing.T) {
	const ttl = 5 * time.Minute
	srv := storetest.StdioServer("x")
	ok := store.Discovery{Status: store.StatusSuccess, VerifiedAt: storetest.At(0), LastAttemptAt: storetest.At(0), ConfigHash: srv.ConfigHash()}
	failed := ok
	failed.Status, failed.LastAttemptAt, failed.Error = store.StatusTimeout, storetest.At(100), &store.VerifyError{Class: "timeout", Phase: "initializing"}
	edited := srv
	edited.Args, edited.UpdatedAt = []string{"other"}, storetest.At(50)
	short := srv
	short.TTLSeconds = 10

	tests := []struct {
		name string
		sum  store.Summary
		now  time.Time
		want store.Freshness
	}{
		{"never", store.Summary{srv, store.Discovery{Status: store.StatusNever}}, storetest.At(0), store.Freshness{State: store.FreshNever}},
		{"fresh", store.Summary{srv, ok}, storetest.At(299), store.Freshness{State: store.FreshFresh, VerifiedAt: storetest.At(0), Until: storetest.At(300)}},
		{"ttl", store.Summary{srv, ok}, storetest.At(300), store.Freshness{State: store.FreshStale, VerifiedAt: storetest.At(0), Since: storetest.At(300), Reason: store.StaleTTL}},
		{"own ttl", store.Summary{short, ok}, storetest.At(11), store.Freshness{State: store.FreshStale, VerifiedAt: storetest.At(0), Since: storetest.At(10), Reason: store.StaleTTL}},
		{"config", store.Summary{edited, ok}, storetest.At(60), store.Freshness{State: store.FreshStale, VerifiedAt: storetest.At(0), Since: storetest.At(50), Reason: store.StaleConfig}},
		{"failed", store.Summary{srv, failed}, storetest.At(120), store.Freshness{State: store.FreshFailed, VerifiedAt: storetest.At(0), Since: storetest.At(100), Error: failed.Error}},
		{"running keeps", store.Summary{srv, store.Discovery{Status: store.StatusRunning, VerifiedAt: storetest.At(0), ConfigHash: srv.ConfigHash()}}, storetest.At(1), store.Freshness{State: store.FreshFresh, VerifiedAt: storetest.At(0), Until: storetest.At(300)}},
	}
	for _, tt := range tests {
		if got := tt.sum.Freshness(ttl, tt.now); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Freshness = %+v; want %+v", tt.name, got, tt.want)
		}
	}
	remote := store.Server{Transport: store.TransportHTTP}
	on, off := true, false
	if !remote.AutoRefreshOn() || srv.AutoRefreshOn() {
		t.Errorf("AutoRefreshOn defaults: remote %v, stdio %v; want true, false", remote.AutoRefreshOn(), srv.AutoRefreshOn())
	}
	remote.AutoRefresh, srv.AutoRefresh = &off, &on
	if remote.AutoRefreshOn() || !srv.AutoRefreshOn() {
		t.Errorf("AutoRefreshOn set: remote %v, stdio %v; want false, true", remote.AutoRefreshOn(), srv.AutoRefreshOn())
	}
}

// A preset decides a new tool's policy from what the tool claims: under
// read-only, only a tool declaring itself read-only and closed-world is
// allowed; each reason starts with the policy.
func TestPresetPolicy(t *testing.T) {
	tests := []struct {
		preset      store.Preset
		annotations string
		want        store.Policy
		reason      string
	}{
		{store.PresetAskAll, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyAsk, "ask: preset ask for everything"},
		{store.PresetAllowAll, `{"destructiveHint":true}`, store.PolicyAllow, "allow: preset allow all"},
		{store.PresetReadOnly, `{"readOnlyHint":true,"openWorldHint":false}`, store.PolicyAllow, "allow: preset read-only (declared read-only and closed-world)"},
		{store.PresetReadOnly, `{"readOnlyHint":true}`, store.PolicyAsk, "ask: may reach outside systems (preset read-only)"},
		{store.PresetReadOnly, `{"destructiveHint":false,"openWorldHint":false}`, store.PolicyAsk, "ask: not declared read-only (preset read-only)"},
		{store.PresetReadOnly, ``, store.PolicyAsk, "ask: may be destructive (preset read-only)"},
		{store.PresetReadOnly, `not json`, store.PolicyAsk, "ask: may be destructive (preset read-only)"},
	}
	for _, tt := range tests {
		got, reason := store.PresetPolicy(tt.preset, json.RawMessage(tt.annotations))
		if got != tt.want || reason != tt.reason {
			t.Errorf("store.PresetPolicy(%s, %s) = %s, %q; want %s, %q", tt.preset, tt.annotations, got, reason, tt.want, tt.reason)
		}
	}
	// A server with a preset uses it; one without, its default policy.
	ann := json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`)
	if p, _ := store.NewToolPolicy(store.Server{DefaultPolicy: store.PolicyDeny, Preset: store.PresetReadOnly}, ann); p != store.PolicyAllow {
		t.Errorf("new tool of a read-only preset server = %s; want allow", p)
	}
	if p, _ := store.NewToolPolicy(store.Server{DefaultPolicy: store.PolicyDeny}, ann); p != store.PolicyDeny {
		t.Errorf("new tool of a server with no preset = %s; want its default, deny", p)
	}
}

// Selections pick tools by what their annotations claim, with MCP's
// defaults for what they leave out; a preset applied to existing tools
// sets each one's preset policy, missing tools left alone.
func TestSelectionsAndPresetChanges(t *testing.T) {
	tools := []store.ToolEntry{
		{Tool: store.Tool{Name: "read", Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`)}},
		{Tool: store.Tool{Name: "fetch", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}},
		{Tool: store.Tool{Name: "write", Annotations: json.RawMessage(`{"destructiveHint":false,"openWorldHint":false}`)}},
		{Tool: store.Tool{Name: "bare"}},
		{Tool: store.Tool{Name: "gone", State: store.ToolMissing, Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`)}},
	}
	want := map[store.Selection][]string{
		store.SelectAll:       {"read", "fetch", "write", "bare", "gone"},
		store.SelectReadOnly:  {"read", "gone"},
		store.SelectMayChange: {"write", "bare"},
		store.SelectOpenWorld: {"fetch", "bare"},
	}
	for _, sel := range store.Selections {
		var got []string
		for _, tl := range tools {
			if sel.Matches(tl.Tool) {
				got = append(got, tl.Name)
			}
		}
		if !slices.Equal(got, want[sel]) {
			t.Errorf("%s picks %q; want %q", sel, got, want[sel])
		}
	}
	var got []string
	for _, c := range store.PresetChanges(store.PresetReadOnly, tools) {
		got = append(got, c.Tool+"="+string(c.Policy))
	}
	if w := []string{"read=allow", "fetch=ask", "write=ask", "bare=ask"}; !slices.Equal(got, w) {
		t.Errorf("read-only preset applied = %q; want %q", got, w)
	}
}

// A bulk policy names tools or a selection, never both, and a known
// policy; its changes are the named tools, or those the selection picks.
func TestBulkPolicy(t *testing.T) {
	for _, c := range []struct {
		b      store.BulkPolicy
		fields []string
	}{
		{store.BulkPolicy{Policy: store.PolicyAllow, Tools: []string{"a"}}, nil},
		{store.BulkPolicy{Policy: store.PolicyAllow, Select: store.SelectAll}, nil},
		{store.BulkPolicy{Policy: "maybe", Tools: []string{"a"}}, []string{"policy"}},
		{store.BulkPolicy{Policy: store.PolicyAsk}, []string{"tools"}},
		{store.BulkPolicy{Policy: store.PolicyAsk, Tools: []string{"a"}, Select: store.SelectAll}, []string{"select"}},
		{store.BulkPolicy{Policy: store.PolicyAsk, Select: "everything"}, []string{"select"}},
	} {
		got := c.b.Check()
		if len(got) != len(c.fields) {
			t.Errorf("%+v.Check() = %v; want errors on %v", c.b, got, c.fields)
		}
		for _, f := range c.fields {
			if got[f] == "" {
				t.Errorf("%+v.Check() = %v; want an error on %s", c.b, got, f)
			}
		}
	}
	tools := []store.ToolEntry{
		{Tool: store.Tool{Name: "read", Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`)}},
		{Tool: store.Tool{Name: "rm"}},
	}
	for _, c := range []struct {
		b    store.BulkPolicy
		want []string
	}{
		{store.BulkPolicy{Policy: store.PolicyDeny, Select: store.SelectMayChange}, []string{"rm"}},
		{store.BulkPolicy{Policy: store.PolicyDeny, Tools: []string{"read"}}, []string{"read"}},
	} {
		var got []string
		for _, ch := range c.b.Changes(tools) {
			if ch.Policy != c.b.Policy {
				t.Errorf("change %+v; want policy %s", ch, c.b.Policy)
			}
			got = append(got, ch.Tool)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v.Changes = %q; want %q", c.b, got, c.want)
		}
	}
}

package serverconfig

import (
	"reflect"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// A server's settings given back by the API, and sent back as they came
// (secrets masked), validate to the same server: masked values keep the
// stored ones, and the masks never become values.
func TestJSONRoundTrip(t *testing.T) {
	on := true
	srv := store.Server{
		ID: "files", Name: "Files", Transport: store.TransportStdio, Command: "files-mcp", Args: []string{"--root", "/tmp"},
		Env: map[string]string{"API_KEY": "s3cret-value"}, TimeoutMS: 5000, MemoryMB: 256, TTLSeconds: 600, AutoRefresh: &on,
		DefaultPolicy: store.PolicyAllow, Preset: store.PresetReadOnly, Enabled: true,
	}
	j := ToJSON(srv)
	if j.Env["API_KEY"] != SecretMask || j.Preset != store.PresetReadOnly || *j.Enabled != true {
		t.Fatalf("ToJSON = %+v; want the secret masked, the preset and enabled", j)
	}
	got, errs := Validate(j.Input(), &srv)
	if len(errs) > 0 {
		t.Fatalf("Validate(ToJSON(srv).Input()) = %v", errs)
	}
	got.Preset = srv.Preset // kept by the store, not by the settings
	if !reflect.DeepEqual(got.Env, srv.Env) || got.Command != srv.Command || !reflect.DeepEqual(got.Args, srv.Args) ||
		got.TimeoutMS != srv.TimeoutMS || got.MemoryMB != srv.MemoryMB || got.TTLSeconds != srv.TTLSeconds || *got.AutoRefresh != on ||
		got.DefaultPolicy != srv.DefaultPolicy || !got.Enabled {
		t.Errorf("round trip = %+v; want %+v", got, srv)
	}
}

// Recording call arguments is off for a new server, kept by an edit that
// does not mention it (the form never does), and set by one that does.
func TestRecordArguments(t *testing.T) {
	in := Input{ID: "files", Transport: store.TransportStdio, Command: "files-mcp"}
	on, off := true, false
	recording := store.Server{RecordArgs: true}
	for _, tc := range []struct {
		name string
		set  *bool
		old  *store.Server
		want bool
	}{
		{"a new server", nil, nil, false},
		{"a new server, asked for", &on, nil, true},
		{"an edit that does not say", nil, &recording, true},
		{"an edit turning it off", &off, &recording, false},
		{"an edit turning it on", &on, &store.Server{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			in.RecordArgs = tc.set
			srv, errs := Validate(in, tc.old)
			if len(errs) > 0 || srv.RecordArgs != tc.want {
				t.Errorf("Validate(RecordArgs %v, old %+v).RecordArgs = %v, %v; want %v", tc.set, tc.old, srv.RecordArgs, errs, tc.want)
			}
		})
	}
	if j := ToJSON(recording); j.RecordArguments == nil || !*j.RecordArguments || j.Input().RecordArgs == nil {
		t.Errorf("ToJSON(recording).RecordArguments = %v; want true, read back", j.RecordArguments)
	}
}

// What a server may ask of the calling agents is set per kind through the
// API's "asks": a kind left out keeps the stored policy, an answer names
// every kind, and a wrong policy or kind is a field error.
func TestAsksThroughTheAPI(t *testing.T) {
	old := store.Server{ID: "s", Transport: store.TransportStdio, Command: "x", Asks: store.ServerAsks{Roots: store.PolicyDeny}}
	in := ToJSON(old).Input()
	in.Asks = map[string]store.Policy{"sampling": store.PolicyAsk}
	srv, errs := Validate(in, &old)
	if len(errs) > 0 || srv.Asks.Of(store.AskSampling) != store.PolicyAsk || srv.Asks.Of(store.AskRoots) != store.PolicyDeny ||
		srv.Asks.Of(store.AskElicitation) != store.PolicyAllow {
		t.Errorf("Validate(asks sampling: ask) = %+v, %v; want sampling ask, roots kept deny, elicitation allow", srv.Asks, errs)
	}
	if got := ToJSON(srv).Asks; got["sampling"] != "ask" || got["elicitation"] != "allow" || got["roots"] != "deny" {
		t.Errorf("ToJSON(…).Asks = %v; want every kind named", got)
	}
	in.Asks = map[string]store.Policy{"sampling": "maybe", "telepathy": store.PolicyDeny}
	_, errs = Validate(in, &old)
	if errs["asks.sampling"] == "" || errs["asks.telepathy"] == "" {
		t.Errorf("Validate(bad asks) errors = %v; want asks.sampling and asks.telepathy", errs)
	}
}

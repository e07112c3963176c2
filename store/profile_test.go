package store

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestProfileViewAndPolicy(t *testing.T) {
	read, write := ToolRef{ServerID: "a", Tool: "read"}, ToolRef{ServerID: "b", Tool: "write"}
	for _, tc := range []struct {
		name        string
		p           Profile
		ref         ToolRef
		effective   Policy
		wantIn      bool
		wantApplies Policy
	}{
		{"zero profile is all", Profile{}, read, PolicyAllow, true, PolicyAllow},
		{"all", Default(), write, PolicyAsk, true, PolicyAsk},
		{"servers in", Profile{Mode: ProfileServers, Servers: []string{"a"}}, read, PolicyAllow, true, PolicyAllow},
		{"servers out", Profile{Mode: ProfileServers, Servers: []string{"a"}}, write, PolicyAllow, false, PolicyAllow},
		{"tools in", Profile{Mode: ProfileTools, Tools: []ToolRef{write}}, write, PolicyAllow, true, PolicyAllow},
		{"tools out", Profile{Mode: ProfileTools, Tools: []ToolRef{write}}, read, PolicyAllow, false, PolicyAllow},
		{"ask override tightens allow", Profile{Overrides: map[ToolRef]Policy{read: PolicyAsk}}, read, PolicyAllow, true, PolicyAsk},
		{"ask override never loosens deny", Profile{Overrides: map[ToolRef]Policy{read: PolicyAsk}}, read, PolicyDeny, true, PolicyDeny},
		{"deny override", Profile{Overrides: map[ToolRef]Policy{read: PolicyDeny}}, read, PolicyAsk, true, PolicyDeny},
		{"override of another tool", Profile{Overrides: map[ToolRef]Policy{write: PolicyDeny}}, read, PolicyAllow, true, PolicyAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Includes(tc.ref); got != tc.wantIn {
				t.Errorf("Includes(%v) = %v; want %v", tc.ref, got, tc.wantIn)
			}
			if got := tc.p.Policy(tc.ref, tc.effective); got != tc.wantApplies {
				t.Errorf("Policy(%v, %s) = %s; want %s", tc.ref, tc.effective, got, tc.wantApplies)
			}
		})
	}
}

func TestProfileJSONRoundTrip(t *testing.T) {
	ref := ToolRef{ServerID: "a", Tool: "read"}
	p := Profile{ID: "x", Name: "X", Mode: ProfileTools, Tools: []ToolRef{ref}, Overrides: map[ToolRef]Policy{ref: PolicyDeny, {ServerID: "a", Tool: "b"}: PolicyAsk},
		Search: true, Pinned: []ToolRef{ref}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"x","name":"X","mode":"tools","servers":[],"tools":[{"server_id":"a","tool":"read"}],"overrides":[{"server_id":"a","tool":"b","policy":"ask"},{"server_id":"a","tool":"read","policy":"deny"}],"search":true,"pinned":[{"server_id":"a","tool":"read"}],"created_at":"0001-01-01T00:00:00Z","updated_at":"0001-01-01T00:00:00Z"}`
	if string(b) != want {
		t.Errorf("json.Marshal = %s; want %s", b, want)
	}
	var back Profile
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, p) {
		t.Errorf("round trip = %+v, %v; want %+v", back, err, p)
	}
}

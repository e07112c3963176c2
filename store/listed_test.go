package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// prompt is a prompt whose raw definition and pin stand for version.
func prompt(name, version string) store.Listed {
	raw, _ := json.Marshal(map[string]string{"name": name, "description": version})
	return store.Listed{Kind: store.KindPrompt, Key: name, Name: name, Description: version, Raw: raw, Pin: name + "@" + version}
}

// mergeOne merges the one entry offered into known and returns the
// entry as merged.
func mergeOne(t *testing.T, known map[string]store.ListedEntry, offered store.Listed, at time.Time) store.ListedEntry {
	t.Helper()
	out := store.MergeListed(storetest.StdioServer("fs"), known, []store.Listed{offered}, nil, at)
	if len(out) != 1 {
		t.Fatalf("MergeListed(%s) = %d entries; want 1", offered.Pin, len(out))
	}
	return out[0]
}

// A changed entry keeps the definition its policy approved, through
// further changes, until it is approved or comes back to that version;
// its raw JSON is what a review shows as "approved".
func TestMergeListedKeepsApproved(t *testing.T) {
	at := func(n int) time.Time { return time.Date(2026, 1, 1, 0, n, 0, 0, time.UTC) }
	v1, v2, v3 := prompt("greet", "v1"), prompt("greet", "v2"), prompt("greet", "v3")
	key := store.ListedKey(store.KindPrompt, "greet")

	e1 := mergeOne(t, map[string]store.ListedEntry{}, v1, at(1))
	e2 := mergeOne(t, map[string]store.ListedEntry{key: e1}, v2, at(2))
	e3 := mergeOne(t, map[string]store.ListedEntry{key: e2}, v3, at(3))
	back := mergeOne(t, map[string]store.ListedEntry{key: e3}, v1, at(4))
	approved, err := store.ApproveListedEntry(e3, v3.Pin, "me", at(5))
	if err != nil {
		t.Fatalf("ApproveListedEntry(v3) = %v", err)
	}
	e4 := mergeOne(t, map[string]store.ListedEntry{key: approved}, v1, at(6))

	tests := []struct {
		name         string
		got          store.ListedEntry
		wantState    store.ToolState
		wantApproved json.RawMessage
	}{
		{"new", e1, store.ToolActive, nil},
		{"changed", e2, store.ToolChanged, v1.Raw},
		{"changed again", e3, store.ToolChanged, v1.Raw},
		{"back at the approved version", back, store.ToolActive, nil},
		{"approved", approved, store.ToolActive, nil},
		{"changed after the approval", e4, store.ToolChanged, v3.Raw},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.State != tt.wantState || string(tt.got.Approved) != string(tt.wantApproved) {
				t.Errorf("entry = %s, approved %s; want %s, approved %s", tt.got.State, tt.got.Approved, tt.wantState, tt.wantApproved)
			}
		})
	}
	if e3.Policy.Pin != v1.Pin || e4.Policy.Pin != v3.Pin {
		t.Errorf("policy pins = %s, %s; want %s, %s (merging never moves a pin)", e3.Policy.Pin, e4.Policy.Pin, v1.Pin, v3.Pin)
	}
}

// An entry not approved at any version this store saw (its policy's pin
// was never offered) keeps no approved definition: the review can show
// only the current one.
func TestMergeListedApprovedUnknown(t *testing.T) {
	v1, v2 := prompt("greet", "v1"), prompt("greet", "v2")
	known := map[string]store.ListedEntry{store.ListedKey(store.KindPrompt, "greet"): {
		Listed: v1,
		Policy: store.PolicySetting{Policy: store.PolicyAllow, Pin: "greet@v0", SetBy: "me"},
	}}
	got := mergeOne(t, known, v2, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	if got.State != store.ToolChanged || got.Approved != nil {
		t.Errorf("MergeListed(v2, approved at an unseen v0) = %s, approved %s; want changed, none", got.State, got.Approved)
	}
}

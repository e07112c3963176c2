package record

import (
	"testing"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

// Every state discovery flags a tool with is a flagged state of the
// store's (denied, never offered), and every failure class a status the
// store knows; discovery and the store never import each other, so this
// one place ties their words together.
func TestDiscoveryWordsMapToTheStore(t *testing.T) {
	for _, s := range discovery.ToolStates {
		if got, ok := toolStates[s]; !ok || !got.Flagged() || string(got) != string(s) {
			t.Errorf("discovery's %q maps to the store's %q (known %v); want the flagged state of that name", s, got, ok)
		}
	}
	want := map[string]store.Status{discovery.ClassTimeout: store.StatusTimeout, discovery.ClassCancelled: store.StatusCancelled,
		discovery.ClassAuth: store.StatusSignIn, discovery.ClassExited: store.StatusFailed, discovery.ClassNetwork: store.StatusFailed}
	for class, status := range want {
		if got := Status(&discovery.Error{Class: class}); got != status {
			t.Errorf("Status(%s) = %s; want %s", class, got, status)
		}
	}
}

package onboard

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-dev/switchboard/internal/clientconfig"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

func TestCheck(t *testing.T) {
	srv := func(id, cmd string, confirmed bool) store.Summary {
		s := store.Server{ID: id, Transport: store.TransportStdio, Command: cmd, Enabled: true}
		if confirmed {
			s.LaunchConfirmed = s.LaunchHash()
		}
		return store.Summary{Server: s}
	}
	sums := []store.Summary{srv("a", "x", false), srv("b", "y", false), srv("c", "z", true)}
	hash := func(i int) string { return sums[i].Server.LaunchHash() }
	for _, tc := range []struct {
		name        string
		shown       map[string]string
		ok, changed []string
	}{
		{"as shown", map[string]string{"a": hash(0), "b": hash(1)}, []string{"a", "b"}, nil},
		{"one changed", map[string]string{"a": hash(0), "b": "old"}, []string{"a"}, []string{"b"}},
		{"gone", map[string]string{"gone": "h"}, nil, []string{"gone"}},
		{"confirmed already", map[string]string{"c": hash(2)}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, changed := Check(sums, tc.shown)
			var okIDs []string
			for _, s := range ok {
				okIDs = append(okIDs, s.ID)
			}
			if diff := cmp.Diff(tc.ok, okIDs); diff != "" {
				t.Errorf("Check(%v) ok (-want +got):\n%s", tc.shown, diff)
			}
			if diff := cmp.Diff(tc.changed, changed); diff != "" {
				t.Errorf("Check(%v) changed (-want +got):\n%s", tc.shown, diff)
			}
		})
	}
	if got := len(Pending(sums, nil)); got != 2 {
		t.Errorf("Pending(all) = %d servers; want 2", got)
	}
	if got := Pending(sums, []string{}); len(got) != 0 {
		t.Errorf("Pending(none) = %v; want none", got)
	}
}

func TestScan(t *testing.T) {
	files := map[string]string{
		"/c.json": `{"mcpServers": {"a": {"command": "x"}, "b": {"url": "https://b.example/mcp"}}}`,
		"/bad":    `{"mcpServers": `,
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, errors.New("cannot read " + p)
	}
	got := Scan([]clientconfig.Location{
		{Path: "/c.json", Format: clientconfig.Claude, Client: "Claude Desktop"},
		{Path: "/bad", Format: clientconfig.Claude, Client: "Claude Code"},
		{Path: "/gone", Format: clientconfig.Cursor, Client: "Cursor"},
	}, read)
	if len(got) != 3 || got[0] != (views.FoundConfig{Client: "Claude Desktop", Path: "/c.json", Servers: 2}) ||
		got[1].Servers != 0 || got[1].Problem == "" || got[2].Problem != "cannot read /gone" {
		t.Errorf("Scan = %+v; want 2 servers in /c.json and a problem for each other file", got)
	}
}

package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// A registry's copy keeps each version once (a newer pull of it replaces
// it), apart from every other registry's, with its last pull, across a
// reopen; more entries than one of etcd's transactions holds.
func testRegistryCopies(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	const official, private = "https://registry.modelcontextprotocol.io", "https://mcp.example.com/registry"
	if got, pull, err := db.RegistryCopy(ctx, official); err != nil || len(got) != 0 || !pull.At.IsZero() {
		t.Fatalf("a copy never pulled = %v, %+v, %v", got, pull, err)
	}
	entry := func(name, version string, latest bool) store.RegistryEntry {
		doc, _ := json.Marshal(map[string]any{"name": name, "version": version, "description": "d"})
		return store.RegistryEntry{Name: name, Version: version, Latest: latest, Status: "active", UpdatedAt: At(1), Server: doc}
	}
	var many []store.RegistryEntry
	for i := range 250 {
		many = append(many, entry(fmt.Sprintf("io.github.example/server-%03d", i), "1.0.0", true))
	}
	if err := db.PutRegistryEntries(ctx, official, many, store.RegistryPull{At: At(2), Full: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutRegistryEntries(ctx, private, []store.RegistryEntry{entry("com.example/internal", "2.0.0", true)}, store.RegistryPull{At: At(2), Full: true}); err != nil {
		t.Fatal(err)
	}
	// A newer pull: one version again (now not the latest), one new.
	again := entry("io.github.example/server-000", "1.0.0", false)
	again.Status = "deprecated"
	if err := db.PutRegistryEntries(ctx, official, []store.RegistryEntry{again, entry("io.github.example/server-000", "1.1.0", true)},
		store.RegistryPull{At: At(3), Full: true}); err != nil {
		t.Fatal(err)
	}
	db = be.Reopen(t, db)
	got, pull, err := db.RegistryCopy(ctx, official)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 251 || pull.Entries != 251 || !pull.At.Equal(At(3)) || !pull.Full {
		t.Fatalf("the official copy = %d entries, pull %+v; want 251, pulled at 3", len(got), pull)
	}
	found := map[string]store.RegistryEntry{}
	for _, e := range got {
		found[store.RegistryEntryKey(e.Name, e.Version)] = e
	}
	if e := found["io.github.example/server-000@1.0.0"]; e.Latest || e.Status != "deprecated" {
		t.Errorf("the version pulled again = %+v; want it replaced (deprecated, not the latest)", e)
	}
	var doc struct{ Name string }
	if e := found["io.github.example/server-000@1.1.0"]; !e.Latest || json.Unmarshal(e.Server, &doc) != nil || doc.Name != "io.github.example/server-000" {
		t.Errorf("the new version = %+v", e)
	}
	if got, _, _ := db.RegistryCopy(ctx, private); len(got) != 1 || got[0].Name != "com.example/internal" {
		t.Errorf("the private registry's copy = %+v; want its one entry alone", got)
	}
}

// What a registry server's verification ran is recorded once; another
// artifact under the same launch holds it (its launch unconfirmed) until
// the launch is confirmed again, which records the new one.
func testRecordArtifact(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	srv := store.Server{ID: "ev", Name: "ev", Transport: store.TransportStdio, Command: "npx", Args: []string{"-y", "ev@1.0.0"}, Enabled: true,
		From: &store.RegistrySource{Registry: "https://r.example.com", Name: "io.github.x/ev", Version: "1.0.0", Kind: "npm", Package: "ev@1.0.0"}}
	if err := db.CreateServer(ctx, srv); err != nil {
		t.Fatal(err)
	}
	confirm := func() {
		t.Helper()
		s, _ := db.Server(ctx, "ev")
		if err := db.ConfirmLaunch(ctx, "ev", s.LaunchHash(), "ann@example.com"); err != nil {
			t.Fatal(err)
		}
	}
	confirm()
	if err := db.RecordArtifact(ctx, "ev", "npm ev@1.0.0 sha512-AAA"); err != nil {
		t.Fatalf("the first artifact = %v", err)
	}
	if err := db.RecordArtifact(ctx, "ev", "npm ev@1.0.0 sha512-AAA"); err != nil {
		t.Fatalf("the same artifact again = %v", err)
	}
	if s, _ := db.Server(ctx, "ev"); s.From.Artifact != "npm ev@1.0.0 sha512-AAA" || !s.LaunchConfirmedNow() {
		t.Fatalf("after the first = %+v, confirmed %v", s.From, s.LaunchConfirmedNow())
	}
	if err := db.RecordArtifact(ctx, "ev", "npm ev@1.0.0 sha512-BBB"); !errors.Is(err, store.ErrArtifactHeld) {
		t.Fatalf("another artifact = %v; want ErrArtifactHeld", err)
	}
	s, _ := db.Server(ctx, "ev")
	if s.From.Held != "npm ev@1.0.0 sha512-BBB" || s.LaunchConfirmedNow() {
		t.Fatalf("held = %+v, confirmed %v; want held, the launch unconfirmed", s.From, s.LaunchConfirmedNow())
	}
	confirm()
	if s, _ := db.Server(ctx, "ev"); s.From.Artifact != "npm ev@1.0.0 sha512-BBB" || s.From.Held != "" || !s.LaunchConfirmedNow() {
		t.Errorf("after the confirmation = %+v, confirmed %v; want the new artifact recorded", s.From, s.LaunchConfirmedNow())
	}
}

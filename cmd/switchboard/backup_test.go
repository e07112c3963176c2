package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// seedDB makes a database with one server, closed, and returns its path.
func seedDB(t *testing.T) string {
	ctx := context.Background()
	t.Helper()
	path := filepath.Join(t.TempDir(), "sb.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateServer(ctx, store.Server{ID: "files", Name: "Files", Transport: store.TransportStdio, Command: "true", DefaultPolicy: store.PolicyAsk}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// assertBackupOf opens the backup at out and checks it holds the seeded
// server.
func assertBackupOf(t *testing.T, out string) {
	ctx := context.Background()
	t.Helper()
	db, err := bolt.Open(out, bolt.Options{})
	if err != nil {
		t.Fatalf("bolt.Open(%q) of the backup = %v; want nil", out, err)
	}
	defer db.Close()
	if s, err := db.Server(ctx, "files"); err != nil || s.Name != "Files" {
		t.Errorf("Server(files) in the backup = %+v, %v; want the seeded server", s, err)
	}
}

func TestBackup(t *testing.T) {
	tests := []struct {
		name string
		args func(db, out string) []string
		env  func(db string) map[string]string
	}{
		{"--db flag", func(db, out string) []string { return []string{"backup", "--db", db, out} }, func(string) map[string]string { return nil }},
		{"SWITCHBOARD_DB", func(_, out string) []string { return []string{"backup", out} }, func(db string) map[string]string { return map[string]string{"SWITCHBOARD_DB": db} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := seedDB(t)
			out := filepath.Join(t.TempDir(), "backup.db")
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), tt.args(db, out), env(tt.env(db)), nil, &stdout, &stderr); err != nil {
				t.Fatalf("run(%q) = %v (stderr %q); want nil", tt.args(db, out), err, stderr.String())
			}
			if got := stdout.String(); !strings.Contains(got, "Backed up "+db+" to "+out) || !strings.Contains(got, "integrity checked") {
				t.Errorf("stdout = %q; want it to say what was backed up where, checked", got)
			}
			assertBackupOf(t, out)
		})
	}
}

func TestBackupReplacesAnOlderBackup(t *testing.T) {
	db := seedDB(t)
	out := filepath.Join(t.TempDir(), "backup.db")
	if err := os.WriteFile(out, []byte("last week's backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"backup", "--db", db, out}, env(nil), nil, &stdout, &stderr); err != nil {
		t.Fatalf("backup over an older file = %v (stderr %q); want nil", err, stderr.String())
	}
	assertBackupOf(t, out)
}

// While a dashboard runs on the database, backup says so and writes
// nothing; the dashboard keeps running.
func TestBackupWhileDashboardRuns(t *testing.T) {
	db := seedDB(t)
	base, _, stop := startServe(t, map[string]string{"SWITCHBOARD_DB": db})
	defer stop()

	out := filepath.Join(t.TempDir(), "backup.db")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"backup", "--db", db, out}, env(nil), nil, &stdout, &stderr)
	var ee *exitError
	if err == nil || errors.As(err, &ee) || !errors.Is(err, store.ErrInUse) || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "stop it") {
		t.Fatalf("backup while the dashboard runs = %v; want an in-use error (exit 1) naming %s and saying to stop the dashboard", err, db)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(%q) after the refused backup = %v; want not exist", out, err)
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz after the refused backup: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /healthz after the refused backup = %d; want 200", resp.StatusCode)
	}
}

func TestBackupErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.db")
	db := seedDB(t)
	out := filepath.Join(dir, "out.db")
	tests := []struct {
		name     string
		args     []string
		wantCode int    // 2 for usage errors, else 1
		want     string // in the message
	}{
		{"no output", []string{"backup", "--db", db}, 2, "exactly one argument"},
		{"two outputs", []string{"backup", "--db", db, out, out}, 2, "exactly one argument"},
		{"bad flag", []string{"backup", "--nope", out}, 2, ""},
		{"no database", []string{"backup", "--db", missing, out}, 1, "no database at " + missing},
		{"empty database", []string{"backup", "--db", empty, out}, 1, "restore a backup"},
		{"onto the database", []string{"backup", "--db", db, db}, 1, "the database itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, env(nil), nil, &stdout, &stderr)
			code := 1
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			}
			if err == nil || code != tt.wantCode || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%q) = %v (exit %d); want exit %d with %q", tt.args, err, code, tt.wantCode, tt.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Stat(%q) after a failed backup = %v; want not exist", out, err)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(%q) after backing it up = %v; want still not exist (never created)", missing, err)
	}
	assertBackupOf(t, db) // backing up onto itself left it intact
}

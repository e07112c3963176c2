package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeChildNeverSeesTheToken runs the dashboard with its API token
// in its environment (as a person would export SWITCHBOARD_TOKEN), has it
// verify a server that records the environment it was started with, and
// checks that neither the token nor anything else of the dashboard's own
// environment reached the server.
func TestServeChildNeverSeesTheToken(t *testing.T) {
	const token = "dashboard-token-6f1c9e0b"
	const other = "dashboard-only-secret-41d2"
	t.Setenv("SWITCHBOARD_TOKEN", token)
	t.Setenv("DASHBOARD_ONLY_SECRET", other)
	vars := map[string]string{
		"SWITCHBOARD_DB":        filepath.Join(t.TempDir(), "sb.db"),
		"SWITCHBOARD_TOKEN":     token,
		"DASHBOARD_ONLY_SECRET": other,
		"PATH":                  os.Getenv("PATH"),
		"HOME":                  os.Getenv("HOME"),
	}
	base, _, stop := startServe(t, vars)
	defer stop()

	call := func(method, path string, body any) map[string]any {
		t.Helper()
		var buf bytes.Buffer
		if body != nil {
			json.NewEncoder(&buf).Encode(body)
		}
		req, _ := http.NewRequest(method, base+path, &buf)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s = %d %v", method, path, resp.StatusCode, out)
		}
		return out
	}

	envFile := filepath.Join(t.TempDir(), "environ")
	call(http.MethodPost, "/api/v1/servers", map[string]any{
		"id": "recorder", "name": "Recorder", "transport": "stdio", "command": "/bin/sh",
		// /proc/$$/environ is exactly what the dashboard passed to execve.
		"args": []string{"-c", `tr '\0' '\n' < /proc/$$/environ > "$0"; exec "$@"`, envFile, fixture, "-tools", "1"},
		"env":  map[string]string{"SERVER_OWN": "server-value"},
	})
	job := call(http.MethodPost, "/api/v1/servers/recorder/verify", map[string]any{"confirm": true})["job"].(map[string]any)
	deadline := time.Now().Add(20 * time.Second)
	for job["finished_at"] == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		job = call(http.MethodGet, "/api/v1/jobs/"+job["id"].(string), nil)["job"].(map[string]any)
	}
	if job["status"] != "success" {
		t.Fatalf("verify: %v", job)
	}
	data, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	environ := string(data)
	if !strings.Contains(environ, "SERVER_OWN=server-value\n") {
		t.Errorf("the server's own env is missing from %q", environ)
	}
	for _, leak := range []string{token, other, "SWITCHBOARD_TOKEN", "SWITCHBOARD_DB", "DASHBOARD_ONLY_SECRET"} {
		if strings.Contains(environ, leak) {
			t.Errorf("the child's environment holds %q:\n%s", leak, environ)
		}
	}
}

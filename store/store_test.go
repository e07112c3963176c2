package store_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

func TestConfigHash(t *testing.T) {
	base := func() store.Server {
		s := storetest.StdioServer("fs")
		s.URL = "https://mcp.example.com/mcp"
		s.Headers = map[string]string{"Authorization": "Bearer abc", "X-Team": "red"}
		return s
	}
	baseHash := base().ConfigHash()
	if len(baseHash) != 64 || strings.Trim(baseHash, "0123456789abcdef") != "" {
		t.Fatalf("ConfigHash() = %q; want 64 lowercase hex digits", baseHash)
	}

	tests := []struct {
		name       string
		edit       func(s *store.Server)
		wantChange bool
	}{
		{"transport", func(s *store.Server) { s.Transport = store.TransportHTTP }, true},
		{"command", func(s *store.Server) { s.Command = "uvx" }, true},
		{"args value", func(s *store.Server) { s.Args[2] = "/var" }, true},
		{"args appended", func(s *store.Server) { s.Args = append(s.Args, "--ro") }, true},
		{"args reordered", func(s *store.Server) { s.Args[0], s.Args[1] = s.Args[1], s.Args[0] }, true},
		{"cwd", func(s *store.Server) { s.Cwd = "/srv2" }, true},
		{"env key renamed", func(s *store.Server) { delete(s.Env, "TOKEN"); s.Env["TOKEN2"] = "secret" }, true},
		{"env key added", func(s *store.Server) { s.Env["DEBUG"] = "" }, true},
		{"env value", func(s *store.Server) { s.Env["TOKEN"] = "secret2" }, true},
		{"url", func(s *store.Server) { s.URL = "https://mcp.example.com/other" }, true},
		{"header key", func(s *store.Server) { delete(s.Headers, "X-Team"); s.Headers["X-Group"] = "red" }, true},
		{"header value", func(s *store.Server) { s.Headers["Authorization"] = "Bearer abd" }, true},
		{"header removed", func(s *store.Server) { delete(s.Headers, "X-Team") }, true},

		{"name", func(s *store.Server) { s.Name = "Another name" }, false},
		{"default policy", func(s *store.Server) { s.DefaultPolicy = store.PolicyDeny }, false},
		{"timeout", func(s *store.Server) { s.TimeoutMS = 60000 }, false},
		{"enabled", func(s *store.Server) { s.Enabled = false }, false},
		{"timestamps", func(s *store.Server) { s.CreatedAt, s.UpdatedAt = storetest.At(1), storetest.At(2) }, false},
		{"env rebuilt in another order", func(s *store.Server) {
			s.Env = map[string]string{}
			s.Env["HOME"] = "/home/me"
			s.Env["TOKEN"] = "secret"
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base()
			tt.edit(&s)
			got := s.ConfigHash()
			if changed := got != baseHash; changed != tt.wantChange {
				t.Errorf("ConfigHash(%s edited) = %s, base %s: changed = %v; want %v", tt.name, got, baseHash, changed, tt.wantChange)
			}
		})
	}
}

func TestConfigHashBoundaries(t *testing.T) {
	stdio := func(command string, args ...string) store.Server {
		return store.Server{Transport: store.TransportStdio, Command: command, Args: args}
	}
	tests := []struct {
		name      string
		a, b      store.Server
		wantEqual bool
	}{
		{"one arg with space vs two args", stdio("x", "a b"), stdio("x", "a", "b"), false},
		{"joined vs split args", stdio("x", "ab"), stdio("x", "a", "b"), false},
		{"trailing empty arg", stdio("x", "a", ""), stdio("x", "a"), false},
		{"one empty arg vs none", stdio("x", ""), stdio("x"), false},
		{"length-prefix lookalike", stdio("x", "1:a"), stdio("x", "1", "a"), false},
		{"colon moved between args", stdio("x", "a:", "b"), stdio("x", "a", ":b"), false},
		{"text moved between command and cwd", store.Server{Command: "ab", Cwd: "c"}, store.Server{Command: "a", Cwd: "bc"}, false},
		{"arg moved into command", stdio("npx -y"), stdio("npx", "-y"), false},
		{"command vs first arg", stdio("", "npx"), stdio("npx"), false},
		{"cwd vs url", store.Server{Cwd: "x"}, store.Server{URL: "x"}, false},
		{"env vs headers", store.Server{Env: map[string]string{"A": "1"}}, store.Server{Headers: map[string]string{"A": "1"}}, false},
		{"env key/value boundary", store.Server{Env: map[string]string{"A=1": ""}}, store.Server{Env: map[string]string{"A": "=1"}}, false},
		{"env values swapped", store.Server{Env: map[string]string{"A": "1", "B": "2"}}, store.Server{Env: map[string]string{"A": "2", "B": "1"}}, false},
		{"nil vs empty args", stdio("x"), store.Server{Transport: store.TransportStdio, Command: "x", Args: []string{}}, true},
		{"nil vs empty maps", store.Server{}, store.Server{Env: map[string]string{}, Headers: map[string]string{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, hb := tt.a.ConfigHash(), tt.b.ConfigHash()
			if (ha == hb) != tt.wantEqual {
				t.Errorf("ConfigHash(%+v) == ConfigHash(%+v) is %v; want %v", tt.a, tt.b, ha == hb, tt.wantEqual)
			}
		})
	}
}

func TestDiscoveryStale(t *testing.T) {
	tests := []struct {
		status   store.Status
		verified bool
		want     bool
	}{
		{store.StatusNever, false, false},
		{store.StatusRunning, false, false},
		{store.StatusFailed, false, false},
		{store.StatusTimeout, false, false},
		{store.StatusCancelled, false, false},
		{store.StatusInterrupted, false, false},
		{store.StatusSuccess, true, false},
		{store.StatusRunning, true, false},
		{store.StatusFailed, true, true},
		{store.StatusTimeout, true, true},
		{store.StatusCancelled, true, true},
		{store.StatusInterrupted, true, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s verified=%v", tt.status, tt.verified), func(t *testing.T) {
			d := store.Discovery{Status: tt.status}
			if tt.verified {
				d.VerifiedAt = storetest.At(1)
			}
			if got := d.Stale(); got != tt.want {
				t.Errorf("Discovery{Status:%s, verified:%v}.Stale() = %v; want %v", tt.status, tt.verified, got, tt.want)
			}
		})
	}
}

// TestLaunchHash: the launch a person confirms covers what runs (or what
// is contacted), and nothing a secret rotation or a cosmetic edit changes.
func TestLaunchHash(t *testing.T) {
	base := storetest.StdioServer("fs")
	baseHash := base.LaunchHash()
	remote := func(s *store.Server) { s.Transport, s.URL = store.TransportHTTP, "https://mcp.example.com/mcp" }
	tests := []struct {
		name       string
		edit       func(s *store.Server)
		wantChange bool
	}{
		{"command", func(s *store.Server) { s.Command = "uvx" }, true},
		{"args value", func(s *store.Server) { s.Args[2] = "/" }, true},
		{"args split differently", func(s *store.Server) { s.Args = []string{"-y @modelcontextprotocol/server-filesystem", "/tmp"} }, true},
		{"env key added", func(s *store.Server) { s.Env["LD_PRELOAD"] = "/tmp/x.so" }, true},
		{"env key renamed", func(s *store.Server) { delete(s.Env, "TOKEN"); s.Env["TOKEN2"] = "secret" }, true},
		{"cwd", func(s *store.Server) { s.Cwd = "/" }, true},
		{"transport and url", remote, true},
		{"sandbox set", func(s *store.Server) { s.Sandbox = &store.Sandbox{Network: "none"} }, true},
		{"sandbox network widened", func(s *store.Server) { s.Sandbox = &store.Sandbox{Network: "any"} }, true},

		{"env value rotated", func(s *store.Server) { s.Env["TOKEN"] = "rotated" }, false},
		{"name", func(s *store.Server) { s.Name = "Files" }, false},
		{"timeout and memory", func(s *store.Server) { s.TimeoutMS, s.MemoryMB = 1, 64 }, false},
		{"policy", func(s *store.Server) { s.DefaultPolicy = store.PolicyAllow }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := storetest.StdioServer("fs")
			tt.edit(&s)
			if changed := s.LaunchHash() != baseHash; changed != tt.wantChange {
				t.Errorf("LaunchHash changed = %v; want %v", changed, tt.wantChange)
			}
		})
	}
	r1, r2 := storetest.StdioServer("a"), storetest.StdioServer("a")
	remote(&r1)
	remote(&r2)
	r2.Headers = map[string]string{"Authorization": "Bearer x"}
	if r1.LaunchHash() != r2.LaunchHash() {
		t.Error("LaunchHash of a remote server changed with its headers; want only transport and URL")
	}
	r2.URL = "https://evil.example.com/mcp"
	if r1.LaunchHash() == r2.LaunchHash() {
		t.Error("LaunchHash of a remote server did not change with its URL")
	}
}

// A tool discovery flagged (oversized, invalid, unsupported) stays so
// through a merge, whatever its policy, and is denied; a sound one is
// active with its policy.
func TestFlaggedToolsStayDenied(t *testing.T) {
	srv := store.Server{ID: "s", DefaultPolicy: store.PolicyAllow}
	var offered []store.Tool
	for _, st := range []store.ToolState{"", store.ToolOversized, store.ToolInvalid, store.ToolUnsupported} {
		offered = append(offered, store.Tool{Name: "t" + string(st), Pin: "p", State: st,
			Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`)})
	}
	m := store.MergeTools(srv, nil, offered, time.Now())
	for _, tool := range m.Tools {
		flagged := tool.Name != "t"
		if tool.State.Flagged() != flagged {
			t.Errorf("%s: state %q after the merge; flagged %v, want %v", tool.Name, tool.State, tool.State.Flagged(), flagged)
		}
		want := store.PolicyAllow
		if flagged {
			want = store.PolicyDeny
		}
		if got := store.EffectivePolicy(tool, m.NewPolicies[tool.Name]); got != want {
			t.Errorf("%s: effective policy %s; want %s", tool.Name, got, want)
		}
	}
}

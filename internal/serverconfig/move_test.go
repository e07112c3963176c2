package serverconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// Connecting Cursor moves the entries of the servers Switchboard has out
// of its own file and out of the project files of the folders Cursor has
// opened, in one write with Switchboard's entry; what is moved is kept
// beside its file; disconnecting gives every file back as it was.
func TestConnectMovesManagedEntriesAndDisconnectPutsThemBack(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(t.TempDir(), "app")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	own := filepath.Join(home, ".cursor", "mcp.json")
	ownText := `{
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "ghp_secret"}},
    "linear": {"url": "https://mcp.linear.app/sse"},
    "mine": {"command": "my-mcp"}
  }
}
`
	write(own, ownText)
	projFile := filepath.Join(project, ".cursor", "mcp.json")
	projText := "{\n  \"mcpServers\": {\n    \"time\": {\"command\": \"uvx\", \"args\": [\"mcp-server-time\"]}\n  }\n}\n"
	write(projFile, projText)
	// Cursor's record of the folders it opened.
	write(filepath.Join(home, ".config", "Cursor", "User", "workspaceStorage", "a1b2", "workspace.json"),
		`{"folder": "file://`+filepath.ToSlash(project)+`"}`)
	cursor, _ := ClientByKey("cursor")
	getenv := func(string) string { return "" }
	projects := ProjectFiles(cursor, "linux", home, getenv)
	if len(projects) != 1 || projects[0] != projFile {
		t.Fatalf("ProjectFiles = %q; want the opened folder's %s", projects, projFile)
	}
	managed := ManagedOf([]store.Server{
		{ID: "github", Transport: store.TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}},
		{ID: "linear", Transport: store.TransportHTTP, URL: "https://MCP.linear.app/sse/"},
		{ID: "time", Transport: store.TransportStdio, Command: "uvx", Args: []string{"mcp-server-time"}},
		{ID: "other", Transport: store.TransportStdio, Command: "my-mcp", Args: []string{"--else"}},
	})
	entry := cursor.Entry(Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_0123456789abcdef0123"})

	conn, err := PlanConnect(cursor, own, entry, ConnectOptions{Managed: managed, Projects: projects})
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	for _, m := range conn.Moved() {
		moved = append(moved, m.Name)
	}
	if strings.Join(moved, " ") != "github linear time" {
		t.Fatalf("moved %q; want github linear (own file) and time (project)", moved)
	}
	d := conn.Diff()
	for _, want := range []string{`-    "github"`, `-    "linear"`, `-    "time"`, `+    "switchboard"`, projFile} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff lacks %q:\n%s", want, d)
		}
	}
	if pd := conn.PageDiff(); strings.Contains(pd, "ghp_secret") || !strings.Contains(pd, "# "+projFile) {
		t.Errorf("the page's diff shows a secret or lacks the project file:\n%s", pd)
	}
	backups, err := conn.Write(time.Now())
	if err != nil || len(backups) != 2 {
		t.Fatalf("Write = %v, %v; want a backup of each file", backups, err)
	}
	got, _ := os.ReadFile(own)
	if strings.Contains(string(got), "github") || strings.Contains(string(got), "linear") || !strings.Contains(string(got), "my-mcp") || !strings.Contains(string(got), "switchboard") {
		t.Fatalf("own file after connect:\n%s", got)
	}
	if got, _ := os.ReadFile(projFile); strings.Contains(string(got), "time") {
		t.Fatalf("project file after connect:\n%s", got)
	}
	rec, err := os.Stat(MovesPath(own))
	if err != nil || rec.Mode().Perm() != 0o600 {
		t.Fatalf("the moved entries' record: %v, %v; want it kept, 0600", rec, err)
	}
	if b, _ := os.ReadFile(MovesPath(own)); !strings.Contains(string(b), "ghp_secret") {
		t.Errorf("the record does not keep the entry as written:\n%s", b)
	}

	// Connecting again moves nothing more and keeps the record.
	again, err := PlanConnect(cursor, own, entry, ConnectOptions{Managed: managed, Projects: projects})
	if err != nil || len(again.Moved()) != 0 || again.Old == nil {
		t.Fatalf("again: %v moved %v, old %v", err, again.Moved(), again.Old)
	}
	if _, err := again.Write(time.Now()); err != nil {
		t.Fatal(err)
	}

	dis, err := PlanDisconnect(cursor, own)
	if err != nil {
		t.Fatal(err)
	}
	if len(dis.Restored()) != 3 || len(dis.Kept()) != 0 || dis.Old == nil {
		t.Fatalf("disconnect: restored %v, kept %v, old %v", dis.Restored(), dis.Kept(), dis.Old)
	}
	if _, err := dis.Write(time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(own); string(got) != ownText {
		t.Errorf("own file after disconnect:\n%s\nwant:\n%s", got, ownText)
	}
	if got, _ := os.ReadFile(projFile); string(got) != projText {
		t.Errorf("project file after disconnect:\n%s\nwant:\n%s", got, projText)
	}
	if _, err := os.Stat(MovesPath(own)); !os.IsNotExist(err) {
		t.Errorf("the record outlived the disconnect: %v", err)
	}
}

// An entry the person added again under the same name meanwhile is
// theirs: disconnecting keeps it and keeps the moved one in the record.
func TestDisconnectKeepsWhatThePersonAddedAgain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude.json")
	text := `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}, "projects": {"/p": {"mcpServers": {"fs2": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}}}}`
	os.WriteFile(path, []byte(text), 0o600)
	code, _ := ClientByKey("claude-code")
	managed := ManagedOf([]store.Server{{ID: "fs", Transport: store.TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"}}})
	conn, err := PlanConnect(code, path, code.Entry(Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_0123456789abcdef0123"}), ConnectOptions{Managed: managed})
	if err != nil || len(conn.Moved()) != 2 {
		t.Fatalf("%v: moved %v; want the user's and the project's entries", err, conn.Moved())
	}
	if _, err := conn.Write(time.Now()); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(cur), `"mcpServers": {`, `"mcpServers": {"fs": {"command": "mine"},`, 1)), 0o600)
	dis, err := PlanDisconnect(code, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(dis.Kept()) != 1 || dis.Kept()[0].Name != "fs" || len(dis.Restored()) != 1 || dis.Restored()[0].Project != "/p" {
		t.Fatalf("kept %v, restored %v", dis.Kept(), dis.Restored())
	}
	if _, err := dis.Write(time.Now()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !strings.Contains(string(got), `"fs": {"command": "mine"}`) || !strings.Contains(string(got), `"fs2"`) || strings.Contains(string(got), "switchboard") {
		t.Errorf("after disconnect:\n%s", got)
	}
	if b, err := os.ReadFile(MovesPath(path)); err != nil || !strings.Contains(string(b), "server-filesystem") || strings.Contains(string(b), "fs2") {
		t.Errorf("the record should keep only the entry not put back: %v\n%s", err, b)
	}
}

package serverconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A disconnect that cannot write a project file (it changed since the
// plan) loses none of its moved entries: the record keeps what is not
// back in its file, secrets included (found by a review: the record was
// rewritten first, keeping only the entries that could not go back).
func TestADisconnectThatFailsHalfWayLosesNothing(t *testing.T) {
	home := t.TempDir()
	own := filepath.Join(home, ".cursor", "mcp.json")
	writeFile(t, own, `{"mcpServers": {"github": {"command": "npx", "args": ["gh"]}}}`+"\n")
	proj := filepath.Join(t.TempDir(), "app", ".cursor", "mcp.json")
	writeFile(t, proj, `{"mcpServers": {"time": {"command": "uvx", "args": ["t"], "env": {"SECRET": "s3cr3t"}}}}`+"\n")
	cursor, _ := ClientByKey("cursor")
	managed := ManagedOf([]store.Server{
		{ID: "github", Transport: store.TransportStdio, Command: "npx", Args: []string{"gh"}},
		{ID: "time", Transport: store.TransportStdio, Command: "uvx", Args: []string{"t"}},
	})
	entry := cursor.Entry(Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_0123456789abcdef0123"})
	conn, err := PlanConnect(cursor, own, entry, ConnectOptions{Managed: managed, Projects: []string{proj}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(time.Now()); err != nil {
		t.Fatal(err)
	}
	// The person adds a github entry of their own again.
	data, _ := os.ReadFile(own)
	writeFile(t, own, strings.Replace(string(data), `"mcpServers": {`, `"mcpServers": {"github": {"command": "gh-mcp"}, `, 1))

	dis, err := PlanDisconnect(cursor, own)
	if err != nil {
		t.Fatal(err)
	}
	// The editor saves the project file meanwhile (or it cannot be written).
	pdata, _ := os.ReadFile(proj)
	writeFile(t, proj, string(pdata)+"\n")
	_, err = dis.Write(time.Now())
	t.Logf("disconnect Write: %v", err)
	rec, _ := os.ReadFile(MovesPath(own))
	pdata, _ = os.ReadFile(proj)
	if !strings.Contains(string(rec), "s3cr3t") && !strings.Contains(string(pdata), "s3cr3t") {
		t.Errorf("the project's moved entry \"time\" is gone: record=%s\nproject=%s", rec, pdata)
	}
}

// A connect that writes the client's own file (new: no backup) and then
// fails on a project file says the own file is written, so the callers
// keep the token the file holds.
func TestAConnectThatFailsHalfWaySaysWhatItWrote(t *testing.T) {
	home := t.TempDir()
	own := filepath.Join(home, ".cursor", "mcp.json") // not there yet
	proj := filepath.Join(t.TempDir(), "app", ".cursor", "mcp.json")
	writeFile(t, proj, `{"mcpServers": {"time": {"command": "uvx", "args": ["t"]}}}`+"\n")
	cursor, _ := ClientByKey("cursor")
	managed := ManagedOf([]store.Server{{ID: "time", Transport: store.TransportStdio, Command: "uvx", Args: []string{"t"}}})
	entry := cursor.Entry(Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_0123456789abcdef0123"})
	conn, err := PlanConnect(cursor, own, entry, ConnectOptions{Managed: managed, Projects: []string{proj}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, proj, `{"mcpServers": {"time": {"command": "uvx", "args": ["t"]}}}`+"\n\n")
	_, err = conn.Write(time.Now())
	ownData, _ := os.ReadFile(own)
	if err == nil || !MainWritten(err) || !strings.Contains(string(ownData), "sbc_") {
		t.Errorf("Write = %v, MainWritten %v; %s:\n%s", err, MainWritten(err), own, ownData)
	}
	if rec, _ := os.ReadFile(MovesPath(own)); strings.Contains(string(rec), `"time"`) {
		t.Errorf("the record holds an entry still in its project file:\n%s", rec)
	}
}

// A project folder opened under two paths (a link) is one file to
// connect and disconnect.
func TestAProjectFolderOpenedTwiceIsOneFile(t *testing.T) {
	home := t.TempDir()
	own := filepath.Join(home, ".cursor", "mcp.json")
	writeFile(t, own, `{"mcpServers": {}}`+"\n")
	real := filepath.Join(t.TempDir(), "app")
	proj := filepath.Join(real, ".cursor", "mcp.json")
	writeFile(t, proj, `{"mcpServers": {"time": {"command": "uvx", "args": ["t"]}}}`+"\n")
	link := filepath.Join(t.TempDir(), "app-link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cursor, _ := ClientByKey("cursor")
	projects := ProjectFiles(cursor, "linux", home, func(string) string { return "" }, real, link)
	managed := ManagedOf([]store.Server{{ID: "time", Transport: store.TransportStdio, Command: "uvx", Args: []string{"t"}}})
	entry := cursor.Entry(Endpoint{URL: "http://127.0.0.1:7420/mcp", Token: "sbc_0123456789abcdef0123"})
	conn, err := PlanConnect(cursor, own, entry, ConnectOptions{Managed: managed, Projects: projects})
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Write(time.Now())
	if err != nil {
		t.Errorf("connect with %d project paths %q: %v", len(projects), projects, err)
	}
	dis, err := PlanDisconnect(cursor, own)
	if err != nil {
		t.Fatal(err)
	}
	if len(dis.Kept()) > 0 {
		t.Errorf("disconnect keeps %d entries as 'name taken'", len(dis.Kept()))
	}
}

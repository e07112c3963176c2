package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

var agentNameSyntax = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// AgentNames returns the server's tools' agent names by tool name, after
// checking each is well formed, unique, and maps back to its tool.
func AgentNames(t *testing.T, db store.Store, id string) map[string]string {
	ctx := t.Context()
	t.Helper()
	out := map[string]string{}
	owner := map[string]string{}
	for name, e := range MustTools(t, db, id) {
		a := e.AgentName
		if !agentNameSyntax.MatchString(a) || !strings.HasPrefix(a, id+store.AgentSeparator) {
			t.Errorf("tool %q: agent name %q is not %s__[a-zA-Z0-9_-], at most 64 long", name, a, id)
		}
		if other, dup := owner[a]; dup {
			t.Errorf("tools %q and %q share the agent name %q", other, name, a)
		}
		owner[a] = name
		out[name] = a
		back, _, err := db.ToolByAgentName(ctx, a)
		if err != nil || back.Name != name || back.ServerID != id {
			t.Errorf("ToolByAgentName(%q) = %s/%s, %v; want %s/%s", a, back.ServerID, back.Name, err, id, name)
		}
	}
	return out
}

func testAgentNames(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("files"))
	long := strings.Repeat("x", 70)
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(1),
		MkTool("read_file", "v1"), MkTool("a.b", "v1"), MkTool("a_b", "v1"),
		MkTool(long+"-one", "v1"), MkTool(long+"-two", "v1"), MkTool("ü/名前", "v1")))
	names := AgentNames(t, db, s.ID)
	hashed := func(base, tool string) string {
		sum := sha256.Sum256([]byte(tool))
		suffix := "_" + hex.EncodeToString(sum[:])[:8]
		return base[:min(len(base), store.MaxAgentName-len(suffix))] + suffix
	}
	for tool, want := range map[string]string{
		"read_file":   "files__read_file",
		"a_b":         "files__a_b",
		"a.b":         hashed("files__a_b", "a.b"),
		"ü/名前":        hashed("files__"+strings.Repeat("_", len("ü/名前")), "ü/名前"),
		long + "-one": hashed("files__"+long, long+"-one"),
		long + "-two": hashed("files__"+long, long+"-two"),
	} {
		if names[tool] != want {
			t.Errorf("agent name of %q = %q; want %q", tool, names[tool], want)
		}
	}
	// The same names in another order, on another server: the same.
	other := MustCreate(t, db, StdioServer("other"))
	MustRecordSuccess(t, db, other.ID, Verification(other, "j1", At(1), MkTool("a_b", "v1"), MkTool("a.b", "v1")))
	if got := AgentNames(t, db, other.ID); got["a.b"] != hashed("other__a_b", "a.b") || got["a_b"] != "other__a_b" {
		t.Errorf("agent names on another server = %v; want the same rule", got)
	}
	// A tool named like another's hashed name gets a counter.
	MustRecordSuccess(t, db, other.ID, Verification(other, "j2", At(2), MkTool("a_b", "v1"), MkTool("a.b", "v1"),
		MkTool(strings.TrimPrefix(hashed("other__a_b", "a.b"), "other__"), "v1")))
	if got := AgentNames(t, db, other.ID)[strings.TrimPrefix(hashed("other__a_b", "a.b"), "other__")]; got != hashed("other__a_b", "a.b")+"_2" {
		t.Errorf("agent name of a tool named like a hashed name = %q; want it with _2", got)
	}

	// Names stay with their tools: a.b goes missing and a new tool whose
	// base is a.b's arrives; a.b keeps its name and comes back to it.
	MustRecordSuccess(t, db, s.ID, Verification(s, "j2", At(2), MkTool("read_file", "v1"), MkTool("a_b", "v1"), MkTool("a-b", "v1"), MkTool("a:b", "v1")))
	again := AgentNames(t, db, s.ID)
	for tool, a := range names {
		if again[tool] != a {
			t.Errorf("agent name of %q after a re-verification = %q; want it kept (%q)", tool, again[tool], a)
		}
	}
	if a := again["a:b"]; a == names["a.b"] || a == names["a_b"] {
		t.Errorf("new tool a:b got agent name %q, which another tool has", a)
	}
	MustRecordSuccess(t, db, s.ID, Verification(s, "j3", At(3), MkTool("a.b", "v1")))
	if got := AgentNames(t, db, s.ID)["a.b"]; got != names["a.b"] {
		t.Errorf("agent name of restored a.b = %q; want %q", got, names["a.b"])
	}

	for _, bad := range []string{"nope", "files__nope", "other__read_file", "files"} {
		if _, _, err := db.ToolByAgentName(ctx, bad); !errors.Is(err, store.ErrAgentNameUnknown) {
			t.Errorf("ToolByAgentName(%q) = %v; want ErrAgentNameUnknown", bad, err)
		}
	}
	// Deleting the server forgets its names; a new server of the same id
	// starts afresh.
	if err := db.DeleteServer(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.ToolByAgentName(ctx, "files__read_file"); !errors.Is(err, store.ErrAgentNameUnknown) {
		t.Errorf("ToolByAgentName after delete = %v; want ErrAgentNameUnknown", err)
	}
}

// Many long names that agree in their first 64 characters all get
// distinct names (the hash suffix, then a counter, keep them apart).
func testAgentNamesManyCollisions(t *testing.T, be Backend) {
	db := be.Open(t)
	s := MustCreate(t, db, StdioServer("s"))
	var tools []store.Tool
	for i := range 300 {
		tools = append(tools, MkTool(strings.Repeat("y", 80)+string(rune('a'+i%26))+strings.Repeat("z", i/26), "v1"))
	}
	MustRecordSuccess(t, db, s.ID, Verification(s, "j1", At(1), tools...))
	if n := len(AgentNames(t, db, s.ID)); n != 300 {
		t.Errorf("%d agent names; want 300", n)
	}
}

// Agent names given under the earlier budget of 64 characters (a store
// filled before MaxAgentName was 46, here by loading such a dump) are
// shortened once: each a name within the budget that finds its tool (the
// old one no longer does), the server's change announced with its tools,
// the other names kept; a second pass renames and announces nothing.
func testLongAgentNamesShortened(t *testing.T, be Backend) {
	ctx := t.Context()
	from := be.Open(t)
	if _, ok := from.(store.Dumper); !ok {
		t.Skip("the backend cannot load a dump")
	}
	srv := MustCreate(t, from, StdioServer("names"))
	longTool := "search_the_whole_archive_for_documents_by_title"
	MustRecordSuccess(t, from, srv.ID, Verification(srv, "job-1", At(1), MkTool(longTool, "v1"), MkTool("read", "v1")))
	d, err := from.(store.Dumper).Dump(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldName := srv.ID + store.AgentSeparator + longTool // as the 64-character budget gave it
	for i, e := range d.Servers[0].Tools {
		if e.Name == longTool {
			d.Servers[0].Tools[i].AgentName = oldName
		}
	}
	db := be.Open(t)
	if err := db.(store.Dumper).Load(ctx, d); err != nil {
		t.Fatal(err)
	}
	if e, _, err := db.ToolByAgentName(ctx, oldName); err != nil || e.Name != longTool {
		t.Fatalf("ToolByAgentName(%q) before = %+v, %v; want the tool under its old name", oldName, e, err)
	}
	var changes []store.Change
	var mu sync.Mutex
	defer db.Subscribe(func(c store.Change) { mu.Lock(); changes = append(changes, c); mu.Unlock() })()
	n, err := db.ShortenAgentNames(ctx)
	if err != nil || n != 1 {
		t.Fatalf("ShortenAgentNames() = %d, %v; want 1", n, err)
	}
	tools, err := db.Tools(ctx, srv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var newName string
	for _, e := range tools {
		switch {
		case e.Name == longTool:
			newName = e.AgentName
		case e.AgentName != store.AgentName(srv.ID, e.Name):
			t.Errorf("tool %s's agent name = %q; want it kept", e.Name, e.AgentName)
		}
	}
	if len(newName) == 0 || len(newName) > store.MaxAgentName || newName != store.AgentName(srv.ID, longTool) {
		t.Errorf("the long name became %q; want %q, at most %d characters", newName, store.AgentName(srv.ID, longTool), store.MaxAgentName)
	}
	if e, _, err := db.ToolByAgentName(ctx, newName); err != nil || e.Name != longTool {
		t.Errorf("ToolByAgentName(%q) = %+v, %v; want the tool", newName, e, err)
	}
	if _, _, err := db.ToolByAgentName(ctx, oldName); !errors.Is(err, store.ErrAgentNameUnknown) {
		t.Errorf("ToolByAgentName(old %q) = %v; want ErrAgentNameUnknown", oldName, err)
	}
	mu.Lock()
	if len(changes) != 1 || changes[0].ServerID != srv.ID || !changes[0].Tools {
		t.Errorf("changes announced = %+v; want one of %s's tools", changes, srv.ID)
	}
	changes = nil
	mu.Unlock()
	if n, err := db.ShortenAgentNames(ctx); err != nil || n != 0 {
		t.Errorf("ShortenAgentNames() again = %d, %v; want 0", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 0 {
		t.Errorf("a pass with nothing to rename announced %+v", changes)
	}
}

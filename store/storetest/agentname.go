package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
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

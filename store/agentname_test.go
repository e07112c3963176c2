package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

var agentNameSyntax = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// agentNames returns the server's tools' agent names by tool name, after
// checking each is well formed, unique, and maps back to its tool.
func agentNames(t *testing.T, db *DB, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	owner := map[string]string{}
	for name, e := range mustTools(t, db, id) {
		a := e.AgentName
		if !agentNameSyntax.MatchString(a) || !strings.HasPrefix(a, id+AgentSeparator) {
			t.Errorf("tool %q: agent name %q is not %s__[a-zA-Z0-9_-], at most 64 long", name, a, id)
		}
		if other, dup := owner[a]; dup {
			t.Errorf("tools %q and %q share the agent name %q", other, name, a)
		}
		owner[a] = name
		out[name] = a
		back, _, err := db.ToolByAgentName(a)
		if err != nil || back.Name != name || back.ServerID != id {
			t.Errorf("ToolByAgentName(%q) = %s/%s, %v; want %s/%s", a, back.ServerID, back.Name, err, id, name)
		}
	}
	return out
}

func TestAgentNames(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("files"))
	long := strings.Repeat("x", 70)
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(1),
		mkTool("read_file", "v1"), mkTool("a.b", "v1"), mkTool("a_b", "v1"),
		mkTool(long+"-one", "v1"), mkTool(long+"-two", "v1"), mkTool("ü/名前", "v1")))
	names := agentNames(t, db, s.ID)
	hashed := func(base, tool string) string {
		sum := sha256.Sum256([]byte(tool))
		return withSuffix(base, "_"+hex.EncodeToString(sum[:])[:8])
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
	other := mustCreate(t, db, stdioServer("other"))
	mustRecordSuccess(t, db, other.ID, verification(other, "j1", at(1), mkTool("a_b", "v1"), mkTool("a.b", "v1")))
	if got := agentNames(t, db, other.ID); got["a.b"] != hashed("other__a_b", "a.b") || got["a_b"] != "other__a_b" {
		t.Errorf("agent names on another server = %v; want the same rule", got)
	}
	// A tool named like another's hashed name gets a counter.
	mustRecordSuccess(t, db, other.ID, verification(other, "j2", at(2), mkTool("a_b", "v1"), mkTool("a.b", "v1"),
		mkTool(strings.TrimPrefix(hashed("other__a_b", "a.b"), "other__"), "v1")))
	if got := agentNames(t, db, other.ID)[strings.TrimPrefix(hashed("other__a_b", "a.b"), "other__")]; got != hashed("other__a_b", "a.b")+"_2" {
		t.Errorf("agent name of a tool named like a hashed name = %q; want it with _2", got)
	}

	// Names stay with their tools: a.b goes missing and a new tool whose
	// base is a.b's arrives; a.b keeps its name and comes back to it.
	mustRecordSuccess(t, db, s.ID, verification(s, "j2", at(2), mkTool("read_file", "v1"), mkTool("a_b", "v1"), mkTool("a-b", "v1"), mkTool("a:b", "v1")))
	again := agentNames(t, db, s.ID)
	for tool, a := range names {
		if again[tool] != a {
			t.Errorf("agent name of %q after a re-verification = %q; want it kept (%q)", tool, again[tool], a)
		}
	}
	if a := again["a:b"]; a == names["a.b"] || a == names["a_b"] {
		t.Errorf("new tool a:b got agent name %q, which another tool has", a)
	}
	mustRecordSuccess(t, db, s.ID, verification(s, "j3", at(3), mkTool("a.b", "v1")))
	if got := agentNames(t, db, s.ID)["a.b"]; got != names["a.b"] {
		t.Errorf("agent name of restored a.b = %q; want %q", got, names["a.b"])
	}

	for _, bad := range []string{"nope", "files__nope", "other__read_file", "files"} {
		if _, _, err := db.ToolByAgentName(bad); !errors.Is(err, ErrAgentNameUnknown) {
			t.Errorf("ToolByAgentName(%q) = %v; want ErrAgentNameUnknown", bad, err)
		}
	}
	// Deleting the server forgets its names; a new server of the same id
	// starts afresh.
	if err := db.DeleteServer(s.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.ToolByAgentName("files__read_file"); !errors.Is(err, ErrAgentNameUnknown) {
		t.Errorf("ToolByAgentName after delete = %v; want ErrAgentNameUnknown", err)
	}
}

// Many long names that agree in their first 64 characters all get
// distinct names (the hash suffix, then a counter, keep them apart).
func TestAgentNamesManyCollisions(t *testing.T) {
	db := mustOpen(t)
	s := mustCreate(t, db, stdioServer("s"))
	var tools []Tool
	for i := range 300 {
		tools = append(tools, mkTool(strings.Repeat("y", 80)+string(rune('a'+i%26))+strings.Repeat("z", i/26), "v1"))
	}
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(1), tools...))
	if n := len(agentNames(t, db, s.ID)); n != 300 {
		t.Errorf("%d agent names; want 300", n)
	}
}

// A schema-2 file gets agent names for its tools when opened.
func TestMigrateToSchema3(t *testing.T) {
	path := t.TempDir() + "/old.db"
	db, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := mustCreate(t, db, stdioServer("files"))
	mustRecordSuccess(t, db, s.ID, verification(s, "j1", at(1), mkTool("read", "v1"), mkTool("a.b", "v1")))
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketAgentNames); err != nil {
			return err
		}
		tb := tx.Bucket(bucketTools).Bucket([]byte("files"))
		for _, name := range []string{"read", "a.b"} {
			var t Tool
			if err := getJSON(tb, []byte(name), &t); err != nil {
				return err
			}
			t.AgentName = ""
			if err := putJSON(tb, []byte(name), t); err != nil {
				return err
			}
		}
		return putJSON(tx.Bucket(bucketMeta), keySchemaVersion, 2)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = mustOpenPath(t, path, Options{})
	if got := agentNames(t, db, "files"); got["read"] != "files__read" || got["a.b"] != agentName("files", "a.b") {
		t.Errorf("agent names after migration = %v", got)
	}
}

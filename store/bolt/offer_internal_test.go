package bolt

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// A schema-5 file, which has no offer records, gets them when opened:
// the MCP offer of its tools is the one Catalog's entries make.
func TestMigrateToSchema6(t *testing.T) {
	ctx := t.Context()
	path := t.TempDir() + "/old.db"
	db := mustOpenPath(t, path, Options{})
	s := storetest.MustCreate(t, db, storetest.StdioServer("files"))
	storetest.MustRecordSuccess(t, db, s.ID, storetest.Verification(s, "j1", storetest.At(1), storetest.MkTool("read", "v1"), storetest.MkTool("write", "v1")))
	makeOlder(t, db, bucketOffers, 5)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpenPath(t, path, Options{})
	want := map[string]store.OfferedTool{}
	if _, err := db.Catalog(ctx, func(_ *store.Summary, e store.ToolEntry) error {
		want[e.AgentName] = store.NewOfferedTool(e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := map[string]store.OfferedTool{}
	if _, err := db.Offer(ctx, func(_ *store.Summary, o store.OfferedTool) error {
		o.Definition = bytes.Clone(o.Definition) // lent until fn returns
		got[o.AgentName] = o
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"files__read", "files__write"} {
		if got[name].Definition == nil || string(got[name].Definition) != string(want[name].Definition) {
			t.Errorf("offer of %s after migration = %s; want %s", name, got[name].Definition, want[name].Definition)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := rawSchemaVersion(t, path), strconv.Itoa(SchemaVersion); got != want {
		t.Errorf("schema version after migration = %s; want %s", got, want)
	}
}

// An offer record reads back as the tool it was written from; any record
// cut short, or any bytes at all, are an error or a tool, never a panic.
func TestOfferRecord(t *testing.T) {
	tools := []store.Tool{
		storetest.MkTool("read", "v1"),
		{Name: "huge", Pin: "p", State: store.ToolOversized, Problems: []string{"it is big", "it is ½ odd"}},
		{Name: "titled", Title: "Títle", Description: strings.Repeat("d", 300), Raw: []byte(`{"name":"titled","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}`), Pin: "x"},
		{Name: "asks", Raw: []byte(`{"name":"asks"}`), Pin: "n", Needs: []string{"elicitation", "sampling+roots"}},
	}
	for _, tool := range tools {
		tool.ServerID, tool.AgentName = "srv", "srv__"+tool.Name
		v := offerRecord(tool)
		got, err := readOfferRecord("srv", []byte(tool.Name), v)
		if err != nil {
			t.Fatalf("readOfferRecord(offerRecord(%s)) = %v", tool.Name, err)
		}
		want := store.NewOfferedTool(store.ToolEntry{Tool: tool})
		if len(want.Problems) == 0 {
			want.Problems = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("offer record of %s reads back as\n%+v\nwant\n%+v", tool.Name, got, want)
		}
		if err := checkOfferRecord(v); err != nil {
			t.Errorf("checkOfferRecord(%s) = %v", tool.Name, err)
		}
		header := len(v) - len(got.Definition)
		for n := range header {
			if _, err := readOfferRecord("srv", nil, v[:n]); err == nil {
				t.Errorf("record of %s cut to %d of its %d header bytes read without an error", tool.Name, n, header)
			}
		}
	}
}

// A record of version 1, written before tools had needs, reads as a
// tool without any.
func TestOfferRecordOfVersion1(t *testing.T) {
	tool := store.Tool{Name: "read", ServerID: "srv", AgentName: "srv__read", Raw: []byte(`{"name":"read"}`), Pin: "p", Problems: []string{"odd"}}
	v2 := offerRecord(tool)
	// Version 1 is version 2 without the needs' count (0, one byte)
	// after the problems.
	header := 1
	for _, f := range []string{tool.AgentName, tool.Title, tool.Description, tool.Pin, string(tool.State)} {
		header += 1 + len(f)
	}
	header += 1 + 1 + len("odd") // the problems
	if v2[header] != 0 {
		t.Fatalf("byte %d of %q is %d, want the needs' count 0", header, v2, v2[header])
	}
	v1 := append(append([]byte{offerRecordV1}, v2[1:header]...), v2[header+1:]...)
	got, err := readOfferRecord("srv", []byte("read"), v1)
	if err != nil {
		t.Fatal(err)
	}
	if want := store.NewOfferedTool(store.ToolEntry{Tool: tool}); !reflect.DeepEqual(got, want) {
		t.Errorf("version 1 record reads as\n%+v\nwant\n%+v", got, want)
	}
}

func FuzzReadOfferRecord(f *testing.F) {
	f.Add(offerRecord(store.Tool{Name: "a", AgentName: "s__a", Raw: []byte(`{"name":"a"}`), Pin: "p"}))
	f.Add([]byte{offerRecordV1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(offerRecord(store.Tool{Name: "a", AgentName: "s__a", Raw: []byte(`{"name":"a"}`), Pin: "p", Needs: []string{"roots"}}))
	f.Fuzz(func(t *testing.T, v []byte) {
		o, err := readOfferRecord("s", []byte("a"), v)
		if err == nil && o.Definition != nil && string(o.Definition[o.SchemaAt[0]:o.SchemaAt[1]]) != string(o.InputSchema) {
			t.Errorf("input schema %q is not at %v of %q", o.InputSchema, o.SchemaAt, o.Definition)
		}
		checkOfferRecord(v)
	})
}

// The policy and pin read from the head of a policy record are what
// decoding it gives, for every record putJSON writes and for others.
func TestReadPolicyHead(t *testing.T) {
	settings := []store.PolicySetting{
		{Policy: store.PolicyAllow, Pin: "abc", SetBy: "me", SetAt: storetest.At(1), Reason: "because"},
		{Policy: store.PolicyDeny},
		{Policy: `we"ird`, Pin: `p\in`},
	}
	for _, s := range settings {
		v, _ := json.Marshal(s)
		got, err := readPolicyHead(v)
		if err != nil || got.Policy != s.Policy || got.Pin != s.Pin {
			t.Errorf("readPolicyHead(%s) = %+v, %v; want policy %q, pin %q", v, got, err, s.Policy, s.Pin)
		}
	}
	for _, v := range []string{`{"pin":"b","policy":"allow"}`, `{ "policy": "ask", "pin": "c" }`} {
		var want store.PolicySetting
		json.Unmarshal([]byte(v), &want)
		if got, err := readPolicyHead([]byte(v)); err != nil || got.Policy != want.Policy || got.Pin != want.Pin {
			t.Errorf("readPolicyHead(%s) = %+v, %v; want %+v", v, got, err, want)
		}
	}
	if _, err := readPolicyHead([]byte(`{"policy":`)); err == nil {
		t.Error("readPolicyHead of a cut record = nil error")
	}
}

// A keyWalk gives, for keys asked in ascending order, what Get gives:
// for keys present, absent, between others, past the last, a prefix of
// another, and a nested bucket's name; and nothing for a missing bucket.
func TestKeyWalk(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "walk.db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := []string{"a", "ab", "c", "d", "f"}
	asked := []string{"", "a", "aa", "ab", "b", "c", "d", "e", "f", "g"}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for _, k := range stored {
			if err := b.Put([]byte(k), []byte("value of "+k)); err != nil {
				return err
			}
		}
		_, err = b.CreateBucket([]byte("e"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		// Every ascending selection of the keys asked, as a walk of
		// another bucket would ask them.
		for mask := 1; mask < 1<<len(asked); mask++ {
			w := newKeyWalk(b)
			for i, k := range asked {
				if mask&(1<<i) == 0 {
					continue
				}
				if got, want := w.get([]byte(k)), b.Get([]byte(k)); !bytes.Equal(got, want) {
					t.Fatalf("selection %b: get(%q) = %q; want %q", mask, k, got, want)
				}
			}
		}
		w := newKeyWalk(nil)
		if got := w.get([]byte("a")); got != nil {
			t.Errorf("get from a missing bucket = %q; want nil", got)
		}
		return nil
	})
}

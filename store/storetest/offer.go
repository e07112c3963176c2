package storetest

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
)

// Offer reads what Catalog reads, at the same revision and in the same
// order, each tool with the agent definition store.AgentDefinition makes
// of it, through every change that moves a tool's definition, state or
// policy, and across a reopen.
func testOffer(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	web, files := MustCreate(t, db, StdioServer("web")), MustCreate(t, db, StdioServer("files"))
	icons := store.Tool{Name: "fetch", Description: "gets <b>pages</b>",
		Raw: json.RawMessage(`{"name":"fetch","icons":[{"src":"https://x"}],"description":"gets <b>pages</b>","inputSchema":{"type":"object","properties":{"url":{"type":"string"}}}}`),
		Pin: "fetch-1"}
	bare := store.Tool{Name: "ping", Raw: json.RawMessage(`{"name":"ping"}`), Pin: "ping-1"}
	huge := store.Tool{Name: "huge", Pin: "huge-1", State: store.ToolOversized, Problems: []string{"it is too big"}}
	// Listed only to agents that answer sampling (see store.Tool.Needs).
	asks := store.Tool{Name: "sample", Raw: json.RawMessage(`{"name":"sample"}`), Pin: "sample-1", Needs: []string{"sampling", "elicitation+roots"}}
	MustRecordSuccess(t, db, web.ID, Verification(web, "j1", At(1), icons, bare, huge, asks))
	a1, a2 := MkTool("a", "v1"), MkTool("a", "v2")
	MustRecordSuccess(t, db, files.ID, Verification(files, "j2", At(2), a1))

	check := func(when string, st store.Store) map[string]store.OfferedTool {
		t.Helper()
		var want []store.ToolEntry
		wantRev, err := st.Catalog(ctx, func(_ *store.Summary, e store.ToolEntry) error {
			want = append(want, e)
			return nil
		})
		if err != nil {
			t.Fatalf("%s: Catalog = %v", when, err)
		}
		var got []store.OfferedTool
		var servers []string
		rev, err := st.Offer(ctx, func(sum *store.Summary, o store.OfferedTool) error {
			if o.Definition != nil { // lent: copied to be kept
				o.Definition = bytes.Clone(o.Definition)
				o.InputSchema = o.Definition[o.SchemaAt[0]:o.SchemaAt[1]:o.SchemaAt[1]]
			}
			got = append(got, o)
			servers = append(servers, sum.Server.ID)
			return nil
		})
		if err != nil || rev != wantRev {
			t.Fatalf("%s: Offer = revision %q, %v; want Catalog's %q, nil", when, rev, err, wantRev)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: Offer gave %d tools; Catalog %d", when, len(got), len(want))
		}
		byName := map[string]store.OfferedTool{}
		for i, o := range got {
			w := store.NewOfferedTool(want[i])
			if servers[i] != o.ServerID {
				t.Errorf("%s: %s came with server %s", when, o.Name, servers[i])
			}
			if len(o.Problems) == 0 && len(w.Problems) == 0 {
				o.Problems, w.Problems = nil, nil
			}
			if !reflect.DeepEqual(o, w) {
				t.Errorf("%s: Offer tool %d =\n%+v\nwant\n%+v", when, i, o, w)
			}
			byName[o.AgentName] = o
		}
		return byName
	}

	offers := check("after verification", db)
	if got := offers["web__sample"].Needs; !reflect.DeepEqual(got, asks.Needs) {
		t.Errorf("Offer gives web__sample needs %q, want %q", got, asks.Needs)
	}
	fetch := offers["web__fetch"]
	var def map[string]json.RawMessage
	if err := json.Unmarshal(fetch.Definition, &def); err != nil {
		t.Fatalf("definition of web__fetch %s: %v", fetch.Definition, err)
	}
	if string(def["name"]) != `"web__fetch"` || def["icons"] != nil || string(def["inputSchema"]) != string(fetch.InputSchema) {
		t.Errorf("definition of web__fetch = %s (input schema %s); want it named web__fetch, without icons, its input schema the entry's", fetch.Definition, fetch.InputSchema)
	}
	if !strings.HasPrefix(string(fetch.Definition), `{"description":`) {
		t.Errorf("definition of web__fetch = %s; want its keys sorted, as canonical JSON has them", fetch.Definition)
	}
	if ping := offers["web__ping"]; string(ping.InputSchema) != `{"type":"object"}` {
		t.Errorf("input schema of web__ping, which has none = %s; want an empty object schema", ping.InputSchema)
	}
	if h := offers["web__huge"]; h.Definition != nil || h.InputSchema != nil || h.State != store.ToolOversized {
		t.Errorf("web__huge, oversized = %s, schema %s, state %s; want no definition", h.Definition, h.InputSchema, h.State)
	}

	if _, err := db.SetPolicy(ctx, store.ToolRef{ServerID: web.ID, Tool: "fetch"}, store.PolicyDeny, "me"); err != nil {
		t.Fatal(err)
	}
	if got := check("after a policy change", db)["web__fetch"]; got.Effective != store.PolicyDeny {
		t.Errorf("web__fetch after SetPolicy(deny): effective %s; want deny", got.Effective)
	}
	MustRecordSuccess(t, db, files.ID, Verification(files, "j3", At(3), a2))
	if got := check("after a change of definition", db)["files__a"]; got.State != store.ToolChanged || got.Pin != a2.Pin {
		t.Errorf("files__a after its definition changed: state %s, pin %s; want changed at %s", got.State, got.Pin, a2.Pin)
	}
	if _, err := db.ApproveChanges(ctx, files.ID, map[string]string{"a": a2.Pin}, "me"); err != nil {
		t.Fatal(err)
	}
	if got := check("after the change was approved", db)["files__a"]; got.State != store.ToolActive || !strings.Contains(string(got.Definition), "a v2") {
		t.Errorf("files__a after approval: state %s, definition %s; want active, of v2", got.State, got.Definition)
	}
	if be.Reopen != nil {
		db = be.Reopen(t, db)
		check("after a reopen", db)
	}
	if err := db.DeleteServer(ctx, web.ID); err != nil {
		t.Fatal(err)
	}
	if got := check("after a server was deleted", db); len(got) != 1 {
		t.Errorf("Offer after deleting web = %d tools; want files' 1", len(got))
	}
}

package etcd

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// openBolt opens a new database file, closed when the test ends.
func openBolt(t *testing.T) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "switchboard.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// dumpStore is a whole store that can move its content.
type dumpStore interface {
	store.Store
	store.Dumper
}

// A catalog filled through the contract moves between the two backends
// both ways with everything, secrets and agent names included, and the
// copy goes on working where the source left off.
func TestDumpLoad(t *testing.T) {
	tests := []struct {
		name     string
		from, to func(t *testing.T) dumpStore
	}{
		{"bolt to etcd", func(t *testing.T) dumpStore { return openBolt(t) }, func(t *testing.T) dumpStore { return open(t) }},
		{"etcd to bolt", func(t *testing.T) dumpStore { return open(t) }, func(t *testing.T) dumpStore { return openBolt(t) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to := tt.from(t), tt.to(t)
			token := storetest.Fill(t, from)
			rev := to.Revision()
			d := storetest.Copy(t, from, to)
			if c := d.Counts(); c.Servers != 2 || c.Tools != 3 || c.Listed != 2 || c.History != 3 || c.Grants != 1 || c.Calls != 3 || c.Clients != 2 || c.Profiles != 1 || c.Sessions != 1 {
				t.Errorf("Dump().Counts() = %+v; want 2 servers, 3 tools, 2 listed, 3 history entries, 1 grant, 3 calls, 2 clients, 1 profile, 1 session", c)
			}
			// env + header + OAuth client secret + grant's access, refresh
			// and client secret + MCP token
			if got := d.Counts().Secrets; got != 8 {
				t.Errorf("Dump().Counts().Secrets = %d; want 8", got)
			}
			if to.Revision() == rev {
				t.Errorf("Revision() after Load = %q, as before; want it moved", rev)
			}
			storetest.CheckFilled(t, to, token)
		})
	}
}

// Load refuses a store that holds anything, even only an MCP token, and
// leaves it as it was.
func TestLoadRefusesNonEmpty(t *testing.T) {
	src := openBolt(t)
	storetest.Fill(t, src)
	d, err := src.Dump(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		open func(t *testing.T) dumpStore
		fill func(t *testing.T, st dumpStore)
	}{
		{"bolt with a server", func(t *testing.T) dumpStore { return openBolt(t) }, func(t *testing.T, st dumpStore) { storetest.MustCreate(t, st, storetest.StdioServer("other")) }},
		{"etcd with a server", func(t *testing.T) dumpStore { return open(t) }, func(t *testing.T, st dumpStore) { storetest.MustCreate(t, st, storetest.StdioServer("other")) }},
		{"etcd with a token", func(t *testing.T) dumpStore { return open(t) }, func(t *testing.T, st dumpStore) {
			if _, err := st.MCPToken(t.Context()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.open(t)
			tt.fill(t, dst)
			storetest.CheckLoadRefused(t, d, dst)
		})
	}
}

// A server whose body, history and calls are each beyond one etcd
// transaction (128 operations) is copied whole, in as many as it takes.
func TestDumpLoadLarge(t *testing.T) {
	ctx := t.Context()
	from, to := openBolt(t), open(t)
	s := storetest.MustCreate(t, from, storetest.StdioServer("big"))
	tools := make([]store.Tool, 6000)
	for i := range tools {
		tools[i] = storetest.MkTool(fmt.Sprintf("tool-%04d", i), "v1")
	}
	storetest.MustRecordSuccess(t, from, "big", storetest.Verification(s, "job-0", storetest.At(1), tools...))
	for i := range store.HistoryKeep + 10 {
		if err := from.RecordFailure(ctx, "big", storetest.Failure(s, fmt.Sprintf("job-%d", i+1), store.StatusFailed, storetest.At(10+i))); err != nil {
			t.Fatal(err)
		}
	}
	calls := make([]store.Call, 3*callsPerTxn+7)
	for i := range calls {
		calls[i] = store.Call{At: storetest.At(i), ServerID: "big", Tool: "tool-0001", Decision: store.DecisionAllowed, Outcome: "ok"}
	}
	if err := from.AppendCalls(ctx, calls); err != nil {
		t.Fatal(err)
	}
	d := storetest.Copy(t, from, to)
	if c := d.Counts(); c.Tools != len(tools) || c.History != store.HistoryKeep || c.Calls != len(calls) {
		t.Errorf("Dump().Counts() = %+v; want %d tools, %d history entries, %d calls", c, len(tools), store.HistoryKeep, len(calls))
	}
	if _, total, err := to.History(ctx, "big", 1); err != nil || total != store.HistoryKeep {
		t.Errorf("History(big) of the copy = %d kept, %v; want %d", total, err, store.HistoryKeep)
	}
}

package verify

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
	"github.com/switchboard-dev/switchboard/store/etcd"
	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
)

// fullDisk is a store whose verification records cannot be written while
// full is set, as on a full disk: the writes fail before they reach the
// backend, so nothing of the backend's own (bbolt keeps such a failure
// itself) writes them later. Only the Service can.
type fullDisk struct {
	store.Store
	full atomic.Bool
}

func (f *fullDisk) RecordSuccess(ctx context.Context, id string, v store.Verification) error {
	if f.full.Load() {
		return syscall.ENOSPC
	}
	return f.Store.RecordSuccess(ctx, id, v)
}

func (f *fullDisk) RecordFailure(ctx context.Context, id string, fl store.Failure) error {
	if f.full.Load() {
		return syscall.ENOSPC
	}
	return f.Store.RecordFailure(ctx, id, fl)
}

// noTokens signs nothing: the test's server asks for no sign-in.
type noTokens struct{}

func (noTokens) Source(string) discovery.TokenSource { return nil }

// A verification whose outcome cannot be saved ends failed, saying why,
// and that failure is written once the store can write again, whatever
// the backend: the record left "running" is repaired without a restart.
func TestAFailedSaveIsWrittenOnceTheStoreCanWrite(t *testing.T) {
	backends := map[string]func(t *testing.T) store.Store{
		"bolt": func(t *testing.T) store.Store {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
		"etcd": func(t *testing.T) store.Store {
			srv, err := etcdtest.Start()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Close)
			db, err := etcd.Open(t.Context(), etcd.Options{Endpoints: []string{srv.Endpoint}, RequestTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st := &fullDisk{Store: open(t)}
			url := serveTools(t)
			srv := store.Server{ID: "full", Name: "Full", Transport: store.TransportHTTP, URL: url, TimeoutMS: 30000, Enabled: true}
			if err := st.CreateServer(ctx, srv); err != nil {
				t.Fatal(err)
			}
			srv, _ = st.Server(ctx, srv.ID)
			s := New(Config{}, st, discovery.NewVerifier(discovery.Limits{}, nil), noTokens{})
			defer s.Close()
			done := make(chan discovery.Job, 1)
			defer s.Subscribe(func(e Event) {
				if e.Job != nil && e.Job.Done() {
					done <- *e.Job
				}
			})()

			st.full.Store(true)
			if _, err := s.Submit(srv, store.TriggerManual); err != nil {
				t.Fatal(err)
			}
			j := <-done
			if j.Status != discovery.JobFailed || j.Error == nil || j.Error.Message != saveFailedDiskFull {
				t.Fatalf("job = %s, %+v; want failed, %q", j.Status, j.Error, saveFailedDiskFull)
			}
			if sum, _ := st.Summary(ctx, srv.ID); sum.Discovery.Status != store.StatusRunning {
				t.Fatalf("record while the disk is full = %s; want running (nothing could be written)", sum.Discovery.Status)
			}

			st.full.Store(false)
			deadline := time.After(time.Minute) // a first retry is due in 100 ms
			for {
				sum, err := st.Summary(ctx, srv.ID)
				if err != nil {
					t.Fatal(err)
				}
				if d := sum.Discovery; d.Status != store.StatusRunning {
					if d.Status != store.StatusFailed || d.JobID != j.ID || d.Error == nil || !strings.Contains(d.Error.Message, "disk full") {
						t.Fatalf("record once written = %s of %s, %+v; want failed of %s, disk full", d.Status, d.JobID, d.Error, j.ID)
					}
					return
				}
				select {
				case <-deadline:
					t.Fatal("the failure was not written within a minute of the store writing again")
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
}

// serveTools serves an MCP server with one tool over streamable HTTP.
func serveTools(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("tools", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes.")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

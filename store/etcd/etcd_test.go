package etcd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/etcd/etcdtest"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// server is the etcd member every test of the package uses, each store
// under a prefix of its own.
var server *etcdtest.Server

func TestMain(m *testing.M) {
	var err error
	if server, err = etcdtest.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start etcd:", err)
		os.Exit(1)
	}
	code := m.Run()
	server.Close()
	os.Exit(code)
}

var stores atomic.Int64

// open opens a store under a new prefix, closed when the test ends.
func open(t *testing.T) *DB {
	t.Helper()
	return openAt(t, fmt.Sprintf("/test-%d/", stores.Add(1)))
}

func openAt(t *testing.T, prefix string) *DB {
	t.Helper()
	db, err := Open(context.Background(), Options{Endpoints: []string{server.Endpoint}, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStore(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return open(t) },
		Reopen: func(t *testing.T, st store.Store) store.Store {
			db := st.(*DB)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return openAt(t, db.Prefix())
		},
		Leftovers: func(t *testing.T, st store.Store, id string) []string {
			db := st.(*DB)
			resp, err := db.cli.Get(context.Background(), db.Prefix(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, kv := range resp.Kvs {
				k := strings.TrimPrefix(string(kv.Key), db.Prefix())
				if strings.HasSuffix(k, "/"+id) || strings.Contains(k, "/"+id+"/") {
					left = append(left, k)
				}
			}
			return left
		},
	})
}

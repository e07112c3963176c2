package toolsearchtest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
)

var update = flag.Bool("update", false, "rewrite testdata/*.tools.json from the installed servers")

func TestMain(m *testing.M) {
	discovery.RunLauncherIfAsked()
	os.Exit(m.Run())
}

// TestRealCatalogs verifies the real servers installed in e2e/node_modules
// with the discovery package, as Switchboard does, and checks that the
// kept catalogs are what they answer today (-update rewrites them).
func TestRealCatalogs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node servers")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is not installed: %v", err)
	}
	modules, err := filepath.Abs("../../../e2e/node_modules/@modelcontextprotocol")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]discovery.Target{
		"everything": {Transport: discovery.TransportStdio, Command: "node",
			Args: []string{filepath.Join(modules, "server-everything/dist/index.js"), "stdio"}},
		"filesystem": {Transport: discovery.TransportStdio, Command: "node",
			Args: []string{filepath.Join(modules, "server-filesystem/dist/index.js"), t.TempDir()}},
	}
	for _, id := range RealServers {
		t.Run(id, func(t *testing.T) {
			target := targets[id]
			if _, err := os.Stat(target.Args[0]); err != nil {
				t.Fatalf("not installed (%v): run `make deps-e2e`", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := discovery.NewVerifier(discovery.Limits{}, nil).Verify(ctx, target, 0, nil)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			raws := make([]json.RawMessage, len(res.Tools))
			for i, tool := range res.Tools {
				raws[i] = tool.Raw
			}
			got, err := json.MarshalIndent(raws, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", id+".tools.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(normalize(t, got), normalize(t, want)) {
				t.Errorf("%s answers tools/list differently from %s: run go test -run TestRealCatalogs -update and relabel the queries", id, path)
			}
		})
	}
}

// normalize re-encodes JSON compactly, so only content is compared.
func normalize(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

package store_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/storetest"
)

// dumpOf is a small dump: one server with a secret, a tool and a call.
func dumpOf() *store.Dump {
	s := storetest.StdioServer("files")
	s.Env = map[string]string{"API_KEY": "hunter2"}
	return &store.Dump{
		Servers: []store.ServerDump{{Server: s, Tools: []store.ToolEntry{{Tool: storetest.MkTool("read", "v1")}}, HistorySeq: 1}},
		Calls:   []store.Call{{Seq: 1, ServerID: "files", Tool: "read"}},
		CallSeq: 1, MCPToken: "sbmcp_secret",
	}
}

func TestDumpDiff(t *testing.T) {
	tests := []struct {
		name   string
		change func(d *store.Dump)
		want   []string
	}{
		{"equal", func(*store.Dump) {}, nil},
		{"env value", func(d *store.Dump) { d.Servers[0].Server.Env["API_KEY"] = "other" }, []string{`server "files": its configuration differs in env`}},
		{"tool", func(d *store.Dump) { d.Servers[0].Tools[0].AgentName = "files__x" }, []string{`server "files": tool "read" differs in agent_name`}},
		{"missing server", func(d *store.Dump) { d.Servers = nil }, []string{`server "files" is missing from the copy`}},
		{"extra call", func(d *store.Dump) { d.Calls = append(d.Calls, store.Call{Seq: 2}) }, []string{`the copy has call 2, which the source has not`}},
		{"history sequence", func(d *store.Dump) { d.Servers[0].HistorySeq = 3 }, []string{`server "files": the history sequence is 1 in the source, 3 in the copy`}},
		{"token", func(d *store.Dump) { d.MCPToken = "sbmcp_other" }, []string{"the MCP token differs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			copied := dumpOf()
			tt.change(copied)
			got := dumpOf().Diff(copied)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Diff() = %q; want %q", got, tt.want)
			}
			for _, line := range got {
				for _, secret := range []string{"hunter2", "other", "sbmcp_"} {
					if strings.Contains(line, secret) {
						t.Errorf("Diff() line %q shows the value %q", line, secret)
					}
				}
			}
		})
	}
}

func TestDumpHolds(t *testing.T) {
	tests := []struct {
		name string
		d    *store.Dump
		want string
	}{
		{"empty", &store.Dump{}, ""},
		{"token only", &store.Dump{MCPToken: "sbmcp_x"}, "an MCP token"},
		{"some of each", dumpOf(), "1 server, 1 call, an MCP token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.Holds(); got != tt.want {
				t.Errorf("Holds() = %q; want %q", got, tt.want)
			}
		})
	}
}

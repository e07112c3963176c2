package serverconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSplitPasted(t *testing.T) {
	withSpace := filepath.Join(t.TempDir(), "my server")
	if err := os.WriteFile(withSpace, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, command string
		args          []string
		want          []string // command then arguments; nil: not split
		env           []KV
	}{
		{name: "a README's line", command: "npx -y @modelcontextprotocol/server-filesystem ~/notes", want: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "~/notes"}},
		{name: "quotes and escapes", command: `uvx mcp-server-git --repository "/tmp/my repo" a\ b`, want: []string{"uvx", "mcp-server-git", "--repository", "/tmp/my repo", "a b"}},
		{name: "variables before it", command: "GITHUB_TOKEN=ghp_x LOG=1 npx -y server-github", want: []string{"npx", "-y", "server-github"},
			env: []KV{{Key: "GITHUB_TOKEN", Value: "ghp_x"}, {Key: "LOG", Value: "1"}}},
		{name: "one word", command: "mcp-server-fetch"},
		{name: "arguments given already", command: "npx -y", args: []string{"x"}},
		{name: "a path with spaces", command: withSpace},
		{name: "an unclosed quote", command: `npx "server`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Transport: "stdio", Command: tc.command, Args: tc.args}
			out, ok := SplitPasted(in)
			if tc.want == nil {
				if ok {
					t.Errorf("split %q into %q %q; want it left as typed", tc.command, out.Command, out.Args)
				}
				return
			}
			if got := append([]string{out.Command}, out.Args...); !ok || !slices.Equal(got, tc.want) {
				t.Errorf("split %q = %q, %v; want %q", tc.command, got, ok, tc.want)
			}
			if !slices.Equal(out.Env, tc.env) {
				t.Errorf("environment of %q = %v; want %v", tc.command, out.Env, tc.env)
			}
		})
	}
}

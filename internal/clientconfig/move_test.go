package clientconfig

import (
	"slices"
	"strings"
	"testing"
)

// Taking entries out and putting them back gives the file back as it
// was, byte for byte, in the layouts people have.
func TestTakeAndPutBackRoundTrip(t *testing.T) {
	cases := []struct {
		name, format, text string
		take               []string // project/name of the entries taken
		left               []string // project/name of those left
	}{
		{
			name: "claude code, user and project scopes", format: Claude,
			text: `{
  "numStartups": 12,
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "ghp_x"}
    },
    "notes": {"type": "stdio", "command": "notes-mcp"},
    "web": {"type": "http", "url": "https://example.com/mcp"}
  },
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]},
        "db": {"command": "db-mcp"}
      }
    }
  }
}
`,
			take: []string{"/github", "/web", "/home/me/app/github"},
			left: []string{"/notes", "/home/me/app/db"},
		},
		{
			name: "cursor, first and last", format: Cursor,
			text: "{\r\n\t\"mcpServers\": {\r\n\t\t\"a\": {\"url\": \"https://a.example/mcp\"},\r\n\t\t\"b\": {\"command\": \"b\"},\r\n\t\t\"c\": {\"command\": \"c\"}\r\n\t}\r\n}\r\n",
			take: []string{"/a", "/c"}, left: []string{"/b"},
		},
		{
			name: "vscode with comments and a trailing comma", format: VSCode,
			text: `{
  // mine
  "servers": {
    "fs": {
      // read-only
      "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
    },
    "time": {"command": "uvx", "args": ["mcp-server-time"]},
  },
  "inputs": [],
}
`,
			take: []string{"/fs"}, left: []string{"/time"},
		},
		{
			name: "comments above and after entries", format: VSCode,
			text: `{
  "servers": {
    "github": {"command": "npx", "args": ["-y", "gh"]}, // PAT in env
    "time": {"command": "uvx", "args": ["mcp-server-time"]},
    // the last one
    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]} /* last */
  }
}
`,
			take: []string{"/github", "/fetch"}, left: []string{"/time"},
		},
		{
			name: "every entry", format: Claude,
			text: "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"x\"}\n  }\n}\n",
			take: []string{"/x"},
		},
		{
			name: "codex", format: Codex,
			text: `model = "o3"

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]

[mcp_servers.github.env]
GITHUB_TOKEN = "ghp_x"

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time"]
`,
			take: []string{"/github"}, left: []string{"/time"},
		},
		{
			name: "codex, the last entry and one written apart", format: Codex,
			text: `[mcp_servers.a]
command = "a"

[mcp_servers.b]
command = "b"

# a's secrets
[mcp_servers.a.env]
KEY = "v"

[mcp_servers.c]
url = "https://c.example/mcp"
`,
			take: []string{"/c"}, left: []string{"/a", "/b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := func(project, name string) string { return project + "/" + name }
			out, moved, err := TakeEntries(tc.format, []byte(tc.text), func(project string, s Server) bool {
				return slices.Contains(tc.take, key(project, s.Name))
			})
			if err != nil {
				t.Fatal(err)
			}
			var took []string
			for _, m := range moved {
				took = append(took, key(m.Project, m.Name))
				if m.Server.Name != m.Name || (m.Server.Command == "" && m.Server.URL == "") {
					t.Errorf("moved %s: server read as %+v", m.Name, m.Server)
				}
			}
			if !slices.Equal(took, tc.take) {
				t.Fatalf("took %q, want %q", took, tc.take)
			}
			left, err := Entries(tc.format, out)
			if err != nil {
				t.Fatalf("what is left does not read: %v\n%s", err, out)
			}
			var names []string
			for _, m := range left {
				names = append(names, key(m.Project, m.Name))
			}
			if !slices.Equal(names, tc.left) {
				t.Fatalf("left %q, want %q:\n%s", names, tc.left, out)
			}
			back, skipped, err := PutBack(tc.format, out, moved)
			if err != nil || len(skipped) > 0 {
				t.Fatalf("PutBack: %v, skipped %v", err, skipped)
			}
			if string(back) != tc.text {
				t.Fatalf("put back:\n%s\nwant:\n%s", back, tc.text)
			}
		})
	}
}

// An entry whose name was taken again meanwhile stays out; the one there
// now is kept as it is, and a gone project is not made up again.
func TestPutBackKeepsWhatIsThereNow(t *testing.T) {
	text := `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}, "projects": {"/p": {"mcpServers": {"c": {"command": "c"}}}}}`
	out, moved, err := TakeEntries(Claude, []byte(text), func(string, Server) bool { return true })
	if err != nil || len(moved) != 3 {
		t.Fatalf("%v %v", moved, err)
	}
	out, err = SetEntry(Claude, out, "a", Server{Command: "a2"})
	if err != nil {
		t.Fatal(err)
	}
	out = []byte(strings.Replace(string(out), `"/p"`, `"/q"`, 1))
	back, skipped, err := PutBack(Claude, out, moved)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 2 || skipped[0].Name != "a" || skipped[1].Name != "c" {
		t.Fatalf("skipped %+v, want a (taken) and c (its project gone)", skipped)
	}
	f, err := Parse(Claude, back)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range f.Servers {
		got[s.Name] = s.Command
	}
	if got["a"] != "a2" || got["b"] != "b" || len(got) != 2 {
		t.Fatalf("after PutBack: %v\n%s", got, back)
	}
}

// Entries that come back into a file that lost its servers object, or
// into a file written anew, are put in one.
func TestPutBackIntoAFileWithoutServers(t *testing.T) {
	_, moved, err := TakeEntries(Cursor, []byte(`{"mcpServers": {"a": {"command": "a", "args": ["x"]}}}`), func(string, Server) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"", "{\n  \"theme\": \"dark\"\n}\n"} {
		back, skipped, err := PutBack(Cursor, []byte(text), moved)
		if err != nil || len(skipped) > 0 {
			t.Fatalf("%q: %v %v", text, err, skipped)
		}
		f, err := Parse(Cursor, back)
		if err != nil || len(f.Servers) != 1 || f.Servers[0].Command != "a" || !slices.Equal(f.Servers[0].Args, []string{"x"}) {
			t.Fatalf("%q: %+v %v\n%s", text, f, err, back)
		}
	}
}

// A config without servers has no entries to take, and is no error.
func TestTakeFromAConfigWithoutServers(t *testing.T) {
	for format, text := range map[string]string{Codex: "model = \"o3\"\n", Cursor: "{}", VSCode: "{\"inputs\": []}"} {
		out, moved, err := TakeEntries(format, []byte(text), func(string, Server) bool { return true })
		if err != nil || len(moved) != 0 || string(out) != text {
			t.Errorf("%s: %q %v %v", format, out, moved, err)
		}
	}
}

// A Codex entry written as an inline table stays where it is (only a
// person edits that safely); the others move.
func TestACodexInlineEntryStays(t *testing.T) {
	text := "[mcp_servers]\ngithub = { command = \"npx\", args = [\"-y\", \"gh\"] }\n\n[mcp_servers.time]\ncommand = \"uvx\"\n"
	out, moved, err := TakeEntries(Codex, []byte(text), func(string, Server) bool { return true })
	if err != nil || len(moved) != 1 || moved[0].Name != "time" || !strings.Contains(string(out), "github = {") {
		t.Fatalf("%v: moved %v\n%s", err, moved, out)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// writeToolsFile writes a -tools-file with the given version and tools.
func writeToolsFile(t *testing.T, path, version string, tools ...map[string]any) {
	t.Helper()
	data, err := json.Marshal(map[string]any{"version": version, "tools": tools})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileTool(name, description string) map[string]any {
	return map[string]any{
		"name": name, "description": description,
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "additionalProperties": false},
		"annotations": map[string]any{"readOnlyHint": true, "openWorldHint": false},
		"_meta":       map[string]any{"fixture/kind": "file"},
	}
}

// Each stdio run serves the file as it is then: tools exactly as written,
// and its version.
func TestToolsFileOverStdio(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	listRun := func() (string, []mcp.Tool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := client.NewStdioMCPClient(fixtureBinary, nil, "-tools-file", file)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		res := initialize(ctx, t, c)
		list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		return res.ServerInfo.Version, list.Tools
	}
	writeToolsFile(t, file, "1.0.0", fileTool("lookup", "Looks up."), fileTool("remove", "Removes."))
	v1, tools1 := listRun()
	if v1 != "1.0.0" || !reflect.DeepEqual(toolNames(tools1), []string{"lookup", "remove"}) {
		t.Fatalf("run 1 = %s %v; want 1.0.0 [lookup remove]", v1, toolNames(tools1))
	}
	raw, _ := json.Marshal(tools1[0])
	for _, want := range []string{`"additionalProperties":false`, `"_meta":{"fixture/kind":"file"}`, `"openWorldHint":false`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("served tool %s lacks %s", raw, want)
		}
	}
	// A description changed and a tool removed, then restored.
	writeToolsFile(t, file, "1.1.0", fileTool("lookup", "Looks up. (changed)"))
	v2, tools2 := listRun()
	if v2 != "1.1.0" || len(tools2) != 1 || tools2[0].Description != "Looks up. (changed)" {
		t.Errorf("run 2 = %s %v; want 1.1.0 with the changed lookup only", v2, tools2)
	}
	writeToolsFile(t, file, "1.0.0", fileTool("lookup", "Looks up."), fileTool("remove", "Removes."))
	if _, tools3 := listRun(); !reflect.DeepEqual(tools3, tools1) {
		t.Errorf("run 3 = %v; want run 1's tools again", tools3)
	}
}

// A live session hears notifications/tools/list_changed when the file
// changes, lists the new tools, and a new session gets the new version.
func TestToolsFileLiveOverHTTP(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	writeToolsFile(t, file, "1.0.0", fileTool("a", "A."), fileTool("b", "B."))
	url := startInProcess(t, "-transport", "http", "-tools-file", file, "-page-size", "1")
	connect := func() (*client.Client, string) {
		t.Helper()
		tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, initialize(ctx, t, c).ServerInfo.Version
	}
	c, v := connect()
	var changed atomic.Int32
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationToolsListChanged {
			changed.Add(1)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if pages, tools := countPages(ctx, t, c); v != "1.0.0" || pages != 2 || !reflect.DeepEqual(toolNames(tools), []string{"a", "b"}) {
		t.Fatalf("first session: version %s, %d pages, %v", v, pages, toolNames(tools))
	}

	writeToolsFile(t, file, "2.0.0", fileTool("a", "A."), fileTool("b", "B."), fileTool("c", "C."))
	deadline := time.Now().Add(5 * time.Second)
	for changed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if changed.Load() == 0 {
		t.Error("no notifications/tools/list_changed within 5 s of the change")
	}
	if pages, tools := countPages(ctx, t, c); pages != 3 || !reflect.DeepEqual(toolNames(tools), []string{"a", "b", "c"}) {
		t.Errorf("after the change: %d pages, %v; want 3 pages a b c", pages, toolNames(tools))
	}
	if _, v := connect(); v != "2.0.0" {
		t.Errorf("a new session's version = %s; want 2.0.0", v)
	}
}

// A bad file at start is a usage error naming the place; one that turns
// bad later leaves the last good tools served, with one line on stderr.
func TestToolsFileErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(file, []byte("{\n  \"tools\": [ {\"name\": } ]\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := run(context.Background(), []string{"-tools-file", file}, noEnv, strings.NewReader(""), &syncBuffer{}, &syncBuffer{})
	var usage *usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "line 2, column 23") {
		t.Errorf("run with a broken file = %v; want a usage error at line 2, column 23", err)
	}
	if err := run(context.Background(), []string{"-tools-file", file + ".missing"}, noEnv, strings.NewReader(""), &syncBuffer{}, &syncBuffer{}); !errors.As(err, &usage) {
		t.Errorf("run with a missing file = %v; want a usage error", err)
	}

	writeToolsFile(t, file, "1.0.0", fileTool("a", "A."))
	live := &liveTools{path: file}
	ctx, cancel := context.WithCancel(context.Background())
	s := newMCPServer(defaultConfig(), nil, live)
	stderr := &syncBuffer{}
	done := make(chan struct{})
	go func() { defer close(done); live.watch(ctx, s, stderr) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for s.GetTool("a") == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(file, []byte(`{"tools": 7}`), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * toolsFilePoll)
	if s.GetTool("a") == nil || live.version("x") != "1.0.0" {
		t.Errorf("after the file turned bad: tool a %v, version %s; want both kept", s.GetTool("a") != nil, live.version("x"))
	}
	if n := strings.Count(stderr.String(), "still serving the previous tools"); n != 1 {
		t.Errorf("stderr has %d complaints; want 1:\n%s", n, stderr.String())
	}
}

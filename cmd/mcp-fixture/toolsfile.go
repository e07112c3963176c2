package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// toolsFilePoll is how often a -tools-file is read again while serving.
const toolsFilePoll = 50 * time.Millisecond

// toolsFile is a -tools-file document: the tools to serve, exactly as
// written (any MCP tool object: name, title, description, inputSchema,
// outputSchema, annotations, _meta, ...), and the serverInfo.version to
// report ("" keeps -version).
type toolsFile struct {
	Version string            `json:"version"`
	Tools   []json.RawMessage `json:"tools"`
}

// liveTools is the -tools-file as last read: the version later
// initialize answers report.
type liveTools struct {
	path string
	mu   sync.Mutex
	data []byte // the content last applied, good or bad
	ver  string
}

// readToolsFile reads and decodes a -tools-file. A syntax or type error
// names the line and column.
func readToolsFile(path string) ([]byte, string, []mcp.Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("tools file: %w", err)
	}
	version, tools, err := decodeToolsFile(data)
	if err != nil {
		return data, "", nil, fmt.Errorf("tools file %s: %w", path, err)
	}
	return data, version, tools, nil
}

func decodeToolsFile(data []byte) (string, []mcp.Tool, error) {
	var doc toolsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return "", nil, positioned(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", nil, errors.New("more than one JSON value")
	}
	tools := make([]mcp.Tool, 0, len(doc.Tools))
	seen := map[string]bool{}
	for i, raw := range doc.Tools {
		var t mcp.Tool
		if err := json.Unmarshal(raw, &t); err != nil {
			return "", nil, fmt.Errorf("tool %d: %w", i, err)
		}
		if t.Name == "" || seen[t.Name] {
			return "", nil, fmt.Errorf("tool %d: a name is required, once per file", i)
		}
		seen[t.Name] = true
		// Serve the schemas exactly as written.
		var parts struct {
			Input  json.RawMessage `json:"inputSchema"`
			Output json.RawMessage `json:"outputSchema"`
		}
		_ = json.Unmarshal(raw, &parts)
		if len(parts.Input) == 0 {
			parts.Input = json.RawMessage(`{"type":"object"}`)
		}
		t.InputSchema, t.RawInputSchema = mcp.ToolInputSchema{}, parts.Input
		if len(parts.Output) > 0 {
			t.OutputSchema, t.RawOutputSchema = mcp.ToolOutputSchema{}, parts.Output
		}
		tools = append(tools, t)
	}
	return doc.Version, tools, nil
}

// positioned adds the line and column of a JSON error's offset.
func positioned(data []byte, err error) error {
	off := int64(-1)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1 // the offset is past the offending byte
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 {
		return err
	}
	before := data[:min(int(max(off, 0)), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n') // 1-based
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// version is the serverInfo.version to report now.
func (l *liveTools) version(fallback string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ver == "" {
		return fallback
	}
	return l.ver
}

// watch reads the file every toolsFilePoll until ctx ends. When its
// content changes, the new tools replace the served ones (mcp-go then
// sends notifications/tools/list_changed to every session) and later
// initialize answers report the new version. A file that turns invalid
// keeps the last good tools, with one line on stderr per bad content.
func (l *liveTools) watch(ctx context.Context, s *server.MCPServer, stderr io.Writer) {
	tick := time.NewTicker(toolsFilePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		data, err := os.ReadFile(l.path)
		l.mu.Lock()
		same := err == nil && bytes.Equal(data, l.data)
		l.mu.Unlock()
		if same || (err != nil && errors.Is(err, os.ErrNotExist)) {
			continue // unchanged, or being replaced
		}
		var version string
		var tools []mcp.Tool
		if err == nil {
			version, tools, err = decodeToolsFile(data)
		}
		l.mu.Lock()
		l.data = data
		if err == nil {
			l.ver = version
		}
		l.mu.Unlock()
		if err != nil {
			fmt.Fprintf(stderr, "mcp-fixture: tools file %s: %v; still serving the previous tools\n", l.path, err)
			continue
		}
		s.SetTools(serverTools(tools)...)
	}
}

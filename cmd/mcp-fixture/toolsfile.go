package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// toolsFilePoll is how often a -tools-file is read again while serving.
const toolsFilePoll = 50 * time.Millisecond

// toolsFileSettle is how long a problem with a -tools-file must last before
// it is reported: a writer that truncates and then stalls (a loaded machine)
// leaves an empty file for more than one poll.
const toolsFileSettle = time.Second

// defaultInputSchema is served for a file tool that has no inputSchema,
// which MCP requires.
const defaultInputSchema = `{"type":"object"}`

// toolsFile is a -tools-file document:
//
//	{"version": "1.2.3", "tools": [{"name": "lookup", "description": "...", "inputSchema": {...}}]}
//
// Version is the serverInfo.version to report ("" keeps -version). Tools
// are MCP tool objects with the fields mcp-go's Tool knows (name, title,
// description, inputSchema, outputSchema, annotations, _meta, icons,
// execution, defer_loading); a field it does not know is refused rather
// than silently dropped. The schemas are served byte for byte (apart from
// white space), so they may hold any JSON Schema; a tool without
// inputSchema gets {"type":"object"}. mcp-go always sends annotations, so
// a tool without them is listed with "annotations": {}.
type toolsFile struct {
	Version string     `json:"version"`
	Tools   []fileTool `json:"tools"`
}

// fileTool is one entry of a toolsFile. Its schemas shadow those of the
// embedded mcp.Tool, so that they are kept as written.
type fileTool struct {
	mcp.Tool
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// liveTools is what a -tools-file made the server report: the version
// that initialize (and, from 2026-07-28, every result's serverInfo) tells.
// The tools themselves live in the MCP server.
type liveTools struct {
	path string

	mu  sync.Mutex
	ver string
}

// readToolsFile reads and decodes a -tools-file for the start of a run. It
// returns the file's content along with its version and tools, so that
// watch can tell when the content changes.
func readToolsFile(path string) ([]byte, string, []mcp.Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("tools file: %w", err)
	}
	version, tools, err := decodeToolsFile(data)
	if err != nil {
		return nil, "", nil, fmt.Errorf("tools file %s: %w", path, err)
	}
	return data, version, tools, nil
}

// decodeToolsFile decodes the content of a -tools-file. A JSON syntax or
// type error names its line and column; a tool without a name, two tools
// of one name and x-mcp-header annotations that mcp-go would refuse (it
// panics on them) are errors too.
func decodeToolsFile(data []byte) (string, []mcp.Tool, error) {
	var doc toolsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return "", nil, positioned(data, err)
	}
	if end := dec.InputOffset(); len(bytes.TrimSpace(data[end:])) > 0 {
		next := int(end) + len(data[end:]) - len(bytes.TrimLeft(data[end:], " \t\r\n"))
		return "", nil, fmt.Errorf("%s: more than one JSON value", lineCol(data, next))
	}
	tools := make([]mcp.Tool, 0, len(doc.Tools))
	seen := map[string]bool{}
	for i, ft := range doc.Tools {
		t := ft.Tool
		switch {
		case t.Name == "":
			return "", nil, fmt.Errorf("tool %d has no name", i)
		case seen[t.Name]:
			return "", nil, fmt.Errorf("tool %d: a second tool named %q", i, t.Name)
		}
		seen[t.Name] = true
		t.RawInputSchema = json.RawMessage(defaultInputSchema)
		if len(ft.InputSchema) > 0 && string(ft.InputSchema) != "null" {
			t.RawInputSchema = ft.InputSchema
		}
		if len(ft.OutputSchema) > 0 && string(ft.OutputSchema) != "null" {
			t.RawOutputSchema = ft.OutputSchema
		}
		if err := mcp.ValidateParamHeaderAnnotations(&t); err != nil {
			return "", nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		tools = append(tools, t)
	}
	return doc.Version, tools, nil
}

// positioned prefixes a JSON decoding error with the line and column of
// the offending byte, when the error tells where that is: for a syntax
// error the byte that is wrong, for a type error the last byte of the
// value of the wrong type, for a file cut short its end.
func positioned(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s: %w", lineCol(data, int(syn.Offset)-1), err) // the offset is past the byte
	case errors.As(err, &typ):
		return fmt.Errorf("%s: %w", lineCol(data, int(typ.Offset)-1), err) // the offset is past the value
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s: %w", lineCol(data, len(data)), err)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: no JSON value", lineCol(data, len(data)))
	}
	return err
}

// lineCol returns "line L, column C" (both from 1, columns in bytes) for
// the byte at offset off of data.
func lineCol(data []byte, off int) string {
	before := data[:min(max(off, 0), len(data))]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n') // from 1
	return fmt.Sprintf("line %d, column %d", line, col)
}

// version is the serverInfo.version to report now: the file's, or
// fallback when the file names none.
func (l *liveTools) version(fallback string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ver == "" {
		return fallback
	}
	return l.ver
}

// setVersion records the file's version.
func (l *liveTools) setVersion(v string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ver = v
}

// watch reads the file every toolsFilePoll and returns when ctx ends.
// applied is the content the server started with (nil if none).
//
// When the content changes and decodes, the new version is recorded first
// (so a client reacting to the notification already sees it) and then, if
// the tools differ from those served, they replace them with SetTools:
// mcp-go sends notifications/tools/list_changed to every initialized
// session and to every 2026-07-28 subscriptions/listen stream. A change
// of the version alone, or of white space, sends nothing.
//
// A file that is missing, unreadable or invalid keeps the last good tools
// and version. The problem is written to stderr once, and only when reads
// have found it for toolsFileSettle, so that a file caught half written
// (os.WriteFile truncates first) or between a remove and a create is not
// reported.
func (l *liveTools) watch(ctx context.Context, s *server.MCPServer, applied []byte, stderr io.Writer) {
	tick := time.NewTicker(toolsFilePoll)
	defer tick.Stop()
	served := toolsKey(s)
	var problem string  // the problem the last read found, "" if none
	var since time.Time // when reads began to find problem
	reported := false   // whether problem has been written to stderr
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		data, err := os.ReadFile(l.path)
		if err == nil && applied != nil && bytes.Equal(data, applied) {
			problem = ""
			continue
		}
		var version string
		var tools []mcp.Tool
		if err != nil {
			err = fmt.Errorf("tools file: %w", err) // names the path
		} else if version, tools, err = decodeToolsFile(data); err != nil {
			err = fmt.Errorf("tools file %s: %w", l.path, err)
		}
		if err != nil {
			msg := err.Error()
			switch {
			case msg != problem:
				problem, since, reported = msg, time.Now(), false // tell only if it lasts
			case !reported && time.Since(since) >= toolsFileSettle:
				fmt.Fprintf(stderr, "mcp-fixture: %s; still serving the previous tools\n", msg)
				reported = true
			}
			continue
		}
		problem = ""
		applied = data
		l.setVersion(version)
		if key := keyOf(tools); !bytes.Equal(key, served) {
			s.SetTools(serverTools(tools)...)
			served = key
		}
	}
}

// toolsKey is keyOf the tools s serves.
func toolsKey(s *server.MCPServer) []byte {
	var tools []mcp.Tool
	for _, t := range s.ListTools() {
		tools = append(tools, t.Tool)
	}
	return keyOf(tools)
}

// keyOf returns the JSON encoding of tools in name order, which is equal
// for two sets exactly when a client would list the same tools.
func keyOf(tools []mcp.Tool) []byte {
	sorted := append([]mcp.Tool{}, tools...) // never nil: no tools is []
	slices.SortFunc(sorted, func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	key, err := json.Marshal(sorted)
	if err != nil {
		// Cannot happen for decoded tools; treat the set as new.
		return fmt.Appendf(nil, "unencodable: %v", err)
	}
	return key
}

// Package clientconfig reads and writes the MCP server configurations of
// the clients people use: Claude Desktop, Claude Code, Cursor, Windsurf
// (all "mcpServers" JSON), VS Code ("servers" + "inputs", JSON with
// comments and trailing commas) and Codex (TOML, [mcp_servers.NAME]).
//
// Parsing is forgiving where it costs nothing (comments and trailing
// commas are accepted in every JSON format, odd spacing and unicode are
// kept) and exact where it matters: a text that cannot be read at all is a
// *SyntaxError with the line and column of the fault, and one bad entry is
// a Problem that does not stop the others from being read. Values are kept
// exactly as written; references such as ${input:api-key}, ${env:HOME} or
// ${API_KEY:-none} stay references and are listed in Server.Refs.
//
// Positions are 1-based. A line ends at "\n" (so "\r\n" files count the
// same). A column counts characters (Unicode code points, not bytes) from
// the start of the line; a tab is one character, and a byte that is not
// valid UTF-8 counts as one. A UTF-8 byte order mark at the start of the
// text is not counted.
//
// The package is pure: it imports no other Switchboard package.
package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Format names.
const (
	Claude = "claude" // {"mcpServers": {...}}: Claude Desktop, Claude Code (.mcp.json; ~/.claude.json with projects.*.mcpServers), Windsurf
	Cursor = "cursor" // {"mcpServers": {...}} as Cursor writes it (remote: url + headers, no type)
	VSCode = "vscode" // {"servers": {...}, "inputs": [...]}, JSON with comments and trailing commas
	Codex  = "codex"  // TOML, [mcp_servers.NAME]
)

// Formats lists them, for flags and forms.
var Formats = []string{Claude, Cursor, VSCode, Codex}

// Transports, as Server.Transport holds them.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http" // Streamable HTTP
	TransportSSE   = "sse"  // the legacy HTTP+SSE transport
)

// Server is one MCP server entry, as a client configures it.
type Server struct {
	// Name is the entry's key, as written. For the projects of
	// ~/.claude.json it is the key too; a name used again (in the same
	// object or another project) keeps the first entry and makes the later
	// one a Problem.
	Name      string
	Transport string // "stdio", "http" (Streamable HTTP) or "sse"
	Command   string
	Args      []string
	Env       map[string]string
	Cwd       string
	URL       string
	Headers   map[string]string
	Disabled  bool  // the client has it turned off ("disabled": true, Codex enabled = false)
	Refs      []Ref // ${input:…}, ${env:…}, ${VAR} references found in values (kept as written in the values)
	Pos       Pos   // where the entry's key is in the text
}

// Ref is a reference a value holds instead of a literal.
type Ref struct {
	Field string // "env.API_KEY", "headers.Authorization", "args[2]", "url", "command", "cwd"
	Ref   string // the reference as written, e.g. "${input:api-key}"
}

// Pos is a 1-based line and column. Columns count characters (Unicode code
// points), not bytes; see the package documentation.
type Pos struct{ Line, Col int }

// String returns "line L, column C".
func (p Pos) String() string { return fmt.Sprintf("line %d, column %d", p.Line, p.Col) }

// Problem is one entry that could not be read; the file's other entries
// still are. Message holds every fault of the entry, separated by "; ".
type Problem struct {
	Name    string
	Pos     Pos
	Message string
}

// SyntaxError says the text cannot be read at all: it is not valid JSON
// (JSON with comments and trailing commas, in every JSON format) or TOML,
// or a part every config needs has the wrong shape ("mcpServers" that is
// not an object). Pos is where the fault is.
type SyntaxError struct {
	Pos     Pos
	Message string
}

// Error returns "line L, column C: message".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Pos.Line, e.Pos.Col, e.Message)
}

// Input is a VS Code input (a prompt for a value, e.g. a password).
type Input struct {
	ID, Type, Description string
	Password              bool
}

// File is a parsed config file.
type File struct {
	Format   string
	Servers  []Server // in file order
	Problems []Problem
	Inputs   []Input  // vscode only
	Warnings []string // things kept but worth saying (e.g. envFile not read, unknown fields ignored)
}

// errEmpty is what Parse and Detect say about a text with nothing in it.
var errEmpty = errors.New("the text is empty")

// Parse reads a config of the given format ("" = Detect). An error is a
// *SyntaxError (with position) or a plain error for a text that is no
// config of that format at all (valid JSON without "mcpServers", say).
func Parse(format string, data []byte) (*File, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if format == "" {
		f, err := Detect(data)
		if err != nil {
			return nil, err
		}
		format = f
	}
	switch format {
	case Claude, Cursor, VSCode:
		return parseJSON(format, data)
	case Codex:
		return parseCodex(data)
	}
	return nil, unknownFormat(format)
}

// Detect guesses the format from the text: TOML with [mcp_servers…] →
// codex; JSON (comments and trailing commas allowed) with "servers" (or a
// VS Code settings.json with "mcp": {"servers"}) → vscode; with
// "mcpServers" (at the top or in the projects of ~/.claude.json) → claude.
// Cursor files are claude-shaped, so Detect says claude for them.
func Detect(data []byte) (string, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		return "", errEmpty
	}
	if looksJSON(data) {
		root, err := readJSON(data)
		if err == nil {
			return detectJSON(root)
		}
		if firstByte(data) != '[' {
			return "", err
		}
		// '[' starts a JSON array or a TOML table header: try TOML too.
		// If both fail, the error of the one the first line looks like.
		if _, terr := readTOML(data); terr != nil {
			if tableHeader.Match(firstLine(data)) {
				return "", terr
			}
			return "", err
		}
	}
	doc, err := readTOML(data)
	if err != nil {
		return "", err
	}
	if _, ok := doc["mcp_servers"]; !ok {
		return "", errors.New("no [mcp_servers] table and no JSON object: not an MCP client config")
	}
	return Codex, nil
}

func unknownFormat(format string) error {
	return fmt.Errorf("unknown format %q (want one of claude, cursor, vscode, codex)", format)
}

var utf8BOM = []byte("\xef\xbb\xbf")

// tableHeader is a line that looks like a TOML table header.
var tableHeader = regexp.MustCompile(`^\[\[?\s*[A-Za-z0-9_"'-][^,{}:]*$`)

// firstLine is the first line of data that is not blank, trimmed.
func firstLine(data []byte) []byte {
	for _, l := range bytes.Split(data, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			return l
		}
	}
	return nil
}

// looksJSON says whether the first thing in data that is not space or a
// comment opens a JSON value rather than TOML.
func looksJSON(data []byte) bool {
	switch firstByte(data) {
	case '{', '[', '"':
		return true
	case '/':
		return true // a // or /* comment: TOML has neither
	}
	return false
}

// firstByte is the first byte of data that is not space and not inside a
// JSON comment.
func firstByte(data []byte) byte {
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case bytes.HasPrefix(data[i:], []byte("//")):
			j := bytes.IndexByte(data[i:], '\n')
			if j < 0 {
				return '/'
			}
			i += j + 1
		case bytes.HasPrefix(data[i:], []byte("/*")):
			j := bytes.Index(data[i+2:], []byte("*/"))
			if j < 0 {
				return '/'
			}
			i += 2 + j + 2
		default:
			return c
		}
	}
	return 0
}

// lines turns byte offsets into positions.
type lines struct {
	data   []byte
	starts []int // offset of the first byte of each line
}

func newLines(data []byte) *lines {
	l := &lines{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			l.starts = append(l.starts, i+1)
		}
	}
	return l
}

// pos is the position of the byte at offset off (off may be len(data):
// the end of the text).
func (l *lines) pos(off int) Pos {
	off = max(0, min(off, len(l.data)))
	i := l.index(off)
	// An offset inside a character (go-toml can point at its last byte)
	// is that character's position.
	for s := off - 1; s >= max(l.starts[i], off-utf8.UTFMax+1); s-- {
		if r, n := utf8.DecodeRune(l.data[s:]); r != utf8.RuneError && s+n > off {
			off = s
			break
		}
	}
	return Pos{Line: i + 1, Col: 1 + utf8.RuneCount(l.data[l.starts[i]:off])}
}

// index is the 0-based line of the byte at offset off.
func (l *lines) index(off int) int {
	return sort.Search(len(l.starts), func(i int) bool { return l.starts[i] > off }) - 1
}

// offset is the byte offset of a 1-based line and a 1-based byte column,
// the way hujson and go-toml count.
func (l *lines) offset(line, byteCol int) int {
	if line < 1 {
		return 0
	}
	if line > len(l.starts) {
		return len(l.data)
	}
	return min(l.starts[line-1]+max(byteCol-1, 0), len(l.data))
}

// checkUTF8 returns a *SyntaxError at the first byte that is not UTF-8.
func checkUTF8(data []byte) error {
	if utf8.Valid(data) {
		return nil
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return &SyntaxError{Pos: newLines(data).pos(i), Message: fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", data[i])}
		}
		i += n
	}
	return nil
}

// maxDepth bounds how deeply objects and arrays may nest; real configs
// use five or six levels.
const maxDepth = 100

// Excerpt is the line of text at line (1-based), and a caret under column
// col (in characters), both cut to a readable width around it.
func Excerpt(text string, line, col int) (string, string) {
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) {
		return "", ""
	}
	l := []rune(strings.TrimRight(lines[line-1], "\r"))
	start := 0
	if col > 60 {
		start = col - 40
	}
	end := min(len(l), start+120)
	if start > len(l) {
		start = len(l)
	}
	shown := string(l[start:end])
	caret := strings.Repeat(" ", max(0, col-1-start)+len(strconv.Itoa(line))+3) + "^"
	return shown, caret
}

package discovery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
)

// The tests in this file, hostile_unix_test.go and hostile_linux_test.go
// walk the catalogue of hostile and broken servers (hostile-servers.md),
// one table per section, each row a mode of cmd/mcp-fixture. Every row
// checks what Verify made of it, that no goroutine outlived it and, for
// stdio on Unix, that no process of the server's group is left. Each logs
// a greppable line:
//
//	hostile #4 trickle: timeout/initializing in 512ms

// hostileCase is one server of the catalogue and what Verify must make of
// it.
type hostileCase struct {
	num  int    // the case's number in hostile-servers.md
	name string // the fixture's -mode, unless target is set
	args []string
	env  map[string]string
	// target replaces the stdio fixture; it may start a server, which the
	// leak check then ignores.
	target func(t *testing.T) Target
	// unwrapped runs the target as is, without the wrapper that records
	// the child's pid (which would turn a spawn error into sh's).
	unwrapped bool
	limits    Limits
	// cancelAfter, if set, cancels the verification after that long.
	cancelAfter time.Duration

	// class and phase are the wanted error; an empty class wants success.
	class, phase string
	// message fragments must be in the error's message, or in one of the
	// warnings on success.
	message []string
	min     time.Duration
	max     time.Duration
	// maxAlloc, if set, bounds the bytes this process allocates during
	// Verify, to show that what the server sends is not buffered.
	maxAlloc uint64
	check    func(t *testing.T, res *Result, e *Error)
}

// fixtureTarget runs the stdio fixture in a mode.
func fixtureTarget(mode string, args ...string) Target {
	return Target{Transport: TransportStdio, Command: fixture, Args: append([]string{"-mode", mode}, args...)}
}

// remoteTarget starts the fixture on a remote transport and targets it.
func remoteTarget(transport string, args ...string) func(t *testing.T) Target {
	return func(t *testing.T) Target {
		return Target{Transport: transport, URL: startRemoteFixture(t, transport, args...)}
	}
}

// runHostile verifies one case and checks the outcome.
func runHostile(t *testing.T, c hostileCase) {
	t.Helper()
	target := fixtureTarget(c.name, c.args...)
	if c.target != nil {
		target = c.target(t)
	}
	if c.env != nil {
		target.Env = c.env
	}
	processesGone := func() {}
	switch {
	case c.unwrapped:
		processesGone = func() { assertNoChildren(t) }
	case target.Transport == TransportStdio:
		target, processesGone = withGroupCheck(t, target)
	}
	ignore := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.cancelAfter > 0 {
		stop := time.AfterFunc(c.cancelAfter, cancel)
		defer stop.Stop()
	}
	var before, after runtime.MemStats
	if c.maxAlloc > 0 {
		runtime.GC()
		runtime.ReadMemStats(&before)
	}
	start := time.Now()
	res, err := NewVerifier(c.limits, nil).Verify(ctx, target, 0, nil)
	d := time.Since(start)
	if c.maxAlloc > 0 {
		runtime.ReadMemStats(&after)
	}

	processesGone()
	goleak.VerifyNone(t, ignore)

	var e *Error
	if err != nil && !errors.As(err, &e) {
		t.Fatalf("Verify error is %T (%v), want *Error", err, err)
	}
	var outcome, detail string
	if e != nil {
		outcome, detail = e.Class+"/"+e.Phase, "message "+strconv.Quote(e.Message)
	} else {
		outcome, detail = "success", fmt.Sprintf("warnings %q", res.Warnings)
	}
	t.Logf("hostile #%d %s: %s in %v", c.num, c.name, outcome, d.Round(time.Millisecond))
	t.Logf("%.300s", detail)

	if c.class == "" {
		if e != nil {
			t.Fatalf("Verify = %v (stderr %q), want success", e, e.StderrTail)
		}
		for _, m := range c.message {
			if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, m) }) {
				t.Errorf("no warning contains %q: %q", m, res.Warnings)
			}
		}
		for _, w := range res.Warnings {
			checkDisplayable(t, "warning", w)
		}
	} else {
		wantClass(t, e, c.class, c.phase)
		for _, m := range c.message {
			if !strings.Contains(e.Message, m) {
				t.Errorf("Message = %q, want it to contain %q", e.Message, m)
			}
		}
		checkDisplayable(t, "Message", e.Message)
	}
	// max is what this server takes on an idle machine, with room; a
	// loaded one (make test beside other work, CI) may take several times
	// that, and the bound is there to catch unbounded work, not noise.
	if slack := 5 * c.max; d < c.min || (c.max > 0 && d > slack) {
		t.Errorf("Verify took %v, want %v to %v (%v on an idle machine)", d, c.min, slack, c.max)
	}
	if c.maxAlloc > 0 {
		if got := after.TotalAlloc - before.TotalAlloc; got > c.maxAlloc {
			t.Errorf("Verify allocated %d bytes, want at most %d", got, c.maxAlloc)
		} else {
			t.Logf("allocated %.1f MiB", float64(got)/(1<<20))
		}
	}
	if c.check != nil {
		c.check(t, res, e)
	}
}

// checkDisplayable checks that text from a server reaches a person
// escaped: valid UTF-8 without control or format characters.
func checkDisplayable(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\u202e' }) {
		t.Errorf("%s %q holds invalid UTF-8 or control characters", what, s)
	}
}

func TestHostileFraming(t *testing.T) {
	const secret = "hunter2-fixture-secret"
	grace := 200 * time.Millisecond
	oneMiB := 1 << 20
	for _, c := range []hostileCase{
		{num: 14, name: "banner", args: []string{"-tools", "2"}, env: map[string]string{"FIXTURE_SECRET": secret},
			message: []string{`\x1b[1;32m>> mcp-fixture\x1b[0m starting, banner line 3 of 3\a token=[redacted]`}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 2 || len(res.Warnings) != 3 {
					t.Errorf("%d tools, warnings %q: want 2 tools and a warning per banner line", len(res.Tools), res.Warnings)
				}
			}},
		{num: 14, name: "banner", args: []string{"-banner-lines", "25"}, env: map[string]string{"FIXTURE_SECRET": secret},
			class: ClassProtocol, phase: PhaseInitializing, max: 2 * time.Second,
			message: []string{"more than 20 lines", `"\x1b[1;32m>> mcp-fixture\x1b[0m starting, banner line 21 of 25\a token=[redacted]"`}},
		{num: 15, name: "huge-line", limits: Limits{MessageBytes: oneMiB, Grace: grace},
			class: ClassTooLarge, phase: PhaseInitializing, message: []string{"larger than 1048576 bytes"}, max: 2 * time.Second, maxAlloc: 4 << 20},
		{num: 15, name: "endless-line", limits: Limits{MessageBytes: oneMiB, Grace: grace},
			class: ClassTooLarge, phase: PhaseInitializing, message: []string{"larger than 1048576 bytes"}, max: 2 * time.Second, maxAlloc: 4 << 20},
		{num: 16, name: "notify-flood", limits: Limits{TotalBytes: int64(oneMiB), Grace: grace},
			class: ClassTooLarge, phase: PhaseInitializing, message: []string{"more than 1048576 bytes in one verification"}, max: 2 * time.Second},
		// Kept for review, flagged invalid, shown repaired, pinned as
		// received; the others are sound.
		{num: 17, name: "invalid-utf8", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				bad := flagged(t, res, 2, "bad_utf8", ToolInvalid, "invalid UTF-8")
				sent := "{\"name\":\"bad_utf8\",\"description\":\"Reads files \xff\xfe named in Latin-1 \xe9t\xe9.\",\"inputSchema\":{\"type\":\"object\"}}"
				if sum := sha256.Sum256([]byte(sent)); bad.Pin != hex.EncodeToString(sum[:]) {
					t.Errorf("Pin = %s, want the SHA-256 of the bytes received", bad.Pin)
				}
				if bad.Description != "Reads files \ufffd\ufffd named in Latin-1 \ufffdt\ufffd." || !utf8.Valid(bad.Raw) {
					t.Errorf("Description %q, Raw %q: want U+FFFD for each invalid byte", bad.Description, bad.Raw)
				}
			}},
		// Rejected at once, not after the listing deadline.
		{num: 18, name: "deep-json", args: []string{"-tools", "2"}, limits: Limits{ListTimeout: 20 * time.Second},
			class: ClassProtocol, phase: PhaseListing, message: []string{"not valid JSON", "exceeded max depth"}, max: 2 * time.Second},
		{num: 19, name: "duplicate-keys", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				flagged(t, res, 2, "dup_keys", ToolInvalid, `duplicate key: "description"`)
			}},
		// The server/discover probe times out, then initialize does.
		{num: 20, name: "wrong-ids", limits: Limits{InitTimeout: time.Second, Grace: grace},
			class: ClassTimeout, phase: PhaseInitializing, min: time.Second, max: 2 * time.Second},
		// The fixture withholds its answers until the client refused
		// sampling, elicitation and roots and answered ping, and fails
		// tools/list if it did anything else.
		{num: 21, name: "client-requests", args: []string{"-tools", "3"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) { checkTools(t, res.Tools, 3) }},
		{num: 22, name: "bad-version", class: ClassProtocol, phase: PhaseInitializing,
			message: []string{`server speaks protocol version "1999-01-01", supported: `, "2025-06-18"}, max: 2 * time.Second},
		{num: 23, name: "no-tools", message: []string{"no tools capability"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 0 || res.Pages != 0 {
					t.Errorf("%d tools on %d pages, want none", len(res.Tools), res.Pages)
				}
			}},
		{num: 24, name: "list-error", env: map[string]string{"FIXTURE_SECRET": secret},
			class: ClassProtocol, phase: PhaseListing, max: 2 * time.Second,
			message: []string{`backend \x1b[31mdown\x1b[0m <b>retry</b> \u202egnp.exe (token [redacted] rejected)`},
			check: func(t *testing.T, _ *Result, e *Error) {
				if strings.Contains(e.Message, secret) {
					t.Errorf("Message %q holds the secret", e.Message)
				}
			}},
		// Default limits: the probe costs DiscoverTimeout (500 ms), not
		// mcp-go's 5 s.
		{num: 25, name: "legacy-silent", args: []string{"-tools", "2"}, max: 1500 * time.Millisecond,
			check: func(t *testing.T, res *Result, _ *Error) {
				if res.ProtocolVersion != "2025-06-18" || len(res.Tools) != 2 {
					t.Errorf("protocol %q, %d tools", res.ProtocolVersion, len(res.Tools))
				}
			}},
	} {
		t.Run(fmt.Sprintf("%02d %s", c.num, c.name), func(t *testing.T) { runHostile(t, c) })
	}
}

// flagged checks a result of generated sound tools (tool_000, ...) plus
// the tool named name, which must be in state with a problem containing
// problem; it returns that tool.
func flagged(t *testing.T, res *Result, generated int, name string, state ToolState, problem string) Tool {
	t.Helper()
	var sound []Tool
	var found *Tool
	for i, tool := range res.Tools {
		switch {
		case tool.Name == name:
			found = &res.Tools[i]
		case tool.State == "":
			sound = append(sound, tool)
		}
	}
	checkTools(t, sound[:min(generated, len(sound))], generated)
	if found == nil {
		t.Fatalf("no tool %.40q in %d tools", name, len(res.Tools))
	}
	if found.State != state || !slices.ContainsFunc(found.Problems, func(p string) bool { return strings.Contains(p, problem) }) {
		t.Errorf("tool %.40q: State %q, Problems %q; want %q with %q", name, found.State, found.Problems, state, problem)
	}
	for _, p := range found.Problems {
		checkDisplayable(t, "problem", p)
	}
	return *found
}

func TestHostileToolData(t *testing.T) {
	// #29: a schema's $ref to a URL is text; anything fetching it would
	// show up here.
	var fetched atomic.Int32
	refServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer refServer.Close()
	refURL := refServer.URL + "/schema.json"
	big := Limits{MessageBytes: 16 << 20, TotalBytes: 32 << 20}
	for _, c := range []hostileCase{
		{num: 26, name: "10 000 tools", target: func(*testing.T) Target {
			return fixtureTarget("normal", "-tools", "10000", "-page-size", "100")
		}, class: ClassTooLarge, phase: PhaseListing, message: []string{"more than 1000 tools"}, max: 10 * time.Second},
		{num: 26, name: "endless-cursor", message: []string{"stopped after 100 pages of tools/list (page limit)"}, max: 5 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 100 || res.Pages != 100 {
					t.Errorf("%d tools on %d pages, want 100 on 100", len(res.Tools), res.Pages)
				}
			}},
		{num: 26, name: "repeat-cursor", message: []string{`tools/list repeated cursor "page-1" on page 2; stopped the walk`}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Tools) != 2 || res.Pages != 2 {
					t.Errorf("%d tools on %d pages, want 2 on 2", len(res.Tools), res.Pages)
				}
			}},
		// A 10 MB schema needs larger message limits even to arrive;
		// with the defaults the page itself is too large. The race
		// detector makes decoding it slow (≈5 s; 1.3 s without).
		// 200 000 tiny entries on one page (2.7 MB): refused before any
		// is decoded; and, with the tool limit raised to let them in,
		// decoded with one warning for each kind of odd entry, not one
		// for each entry.
		{num: 26, name: "many-tiny-tools", args: []string{"-tools", "2"}, max: 10 * time.Second,
			class: ClassTooLarge, phase: PhaseListing, message: []string{"server offers more than 1000 tools (page 1 lists 200002)"}},
		{num: 26, name: "many-tiny-tools", args: []string{"-tools", "2"}, limits: Limits{MaxTools: 250_000}, max: 60 * time.Second,
			message: []string{
				"skipped 80000 tools without a name",
				"skipped 40000 entries of tools/list that are not tool objects, e.g. on page 1: a JSON number",
				`100 tools are listed more than once, with identical definitions (39900 extra entries), e.g. "t0"`,
			},
			check: func(t *testing.T, res *Result, _ *Error) {
				if len(res.Warnings) != 3 {
					t.Errorf("%d warnings, want one for each of the 3 kinds of odd entries: %q", len(res.Warnings), res.Warnings)
				}
				d := flagged(t, res, 2, "d", ToolInvalid, "different definitions under this name")
				// d's definitions also lack the inputSchema MCP requires.
				if len(res.Tools) != 103 || len(d.Problems) != 2 || d.Problems[0] != "it has no inputSchema (MCP requires one)" {
					t.Errorf("%d tools, d has problems %q; want tool_000, tool_001, t0 to t99 and d, with two problems", len(res.Tools), d.Problems)
				}
			}},
		{num: 27, name: "huge-schema", args: []string{"-tools", "2"}, limits: big, max: 30 * time.Second, maxAlloc: 2 * 200 << 20, // two listings (see features.go)
			check: func(t *testing.T, res *Result, _ *Error) {
				huge := flagged(t, res, 2, "huge_schema", ToolOversized, "its input schema is 10485")
				if huge.InputSchema != nil || huge.Raw != nil || huge.Description != "Its input schema is huge." {
					t.Errorf("oversized tool keeps InputSchema %.40q, Raw %.40q; want neither", huge.InputSchema, huge.Raw)
				}
			}},
		{num: 27, name: "huge-schema", args: []string{"-tools", "2", "-schema-bytes", "100000"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				flagged(t, res, 2, "huge_schema", ToolOversized, "(limit 65536); not kept")
			}},
		{num: 27, name: "huge-schema", args: []string{"-tools", "2"}, max: 2 * time.Second,
			class: ClassTooLarge, phase: PhaseListing, message: []string{"larger than 4194304 bytes"}},
		{num: 28, name: "deep-schema", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				deep := flagged(t, res, 2, "deep_schema", ToolOversized, "its input schema nests 2001 levels (limit 32)")
				if deep.InputSchema != nil {
					t.Errorf("InputSchema kept: %.40q", deep.InputSchema)
				}
			}},
		{num: 28, name: "deep-schema within the limit", target: func(*testing.T) Target {
			return fixtureTarget("deep-schema", "-tools", "2", "-depth", "15")
		}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				if tool := res.Tools[2]; tool.Name != "deep_schema" || tool.State != "" || tool.InputSchema == nil {
					t.Errorf("tool %q: State %q, Problems %q; want sound with its schema", tool.Name, tool.State, tool.Problems)
				}
			}},
		{num: 29, name: "schema-refs", args: []string{"-tools", "2", "-ref-url", refURL}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				checkTools(t, res.Tools[:2], 2)
				if len(res.Tools) != 4 || res.Tools[2].State != "" || res.Tools[3].State != "" {
					t.Fatalf("tools %+v: want 4, all sound", res.Tools)
				}
				if !strings.Contains(string(res.Tools[2].InputSchema), `"$ref":"`+refURL+`"`) {
					t.Errorf("net_ref InputSchema %s does not hold the URL as text", res.Tools[2].InputSchema)
				}
				if n := fetched.Load(); n != 0 {
					t.Errorf("the $ref URL was fetched %d times", n)
				}
			}},
		{num: 31, name: "injection", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				checkTools(t, res.Tools[:2], 2)
				add := res.Tools[2]
				for _, hidden := range []string{strings.Repeat(" ", 500), "<IMPORTANT>", "\U000E0069\U000E0067", "\u202e"} {
					if !strings.Contains(add.Description, hidden) {
						t.Errorf("description %q lost %q", add.Description, hidden)
					}
				}
				if add.State != "" {
					t.Errorf("State %q, Problems %q: a description within the limit is kept in full", add.State, add.Problems)
				}
			}},
		{num: 31, name: "injection", args: []string{"-tools", "2", "-description-bytes", "20000"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				add := flagged(t, res, 2, "add", ToolOversized, "its description is 20000 bytes; the first 16384 are kept")
				if len(add.Description) != 16384 || !strings.Contains(add.Description, "<IMPORTANT>") {
					t.Errorf("Description of %d bytes, want the first 16384", len(add.Description))
				}
			}},
		{num: 32, name: "duplicate-names", args: []string{"-tools", "2"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				files := flagged(t, res, 2, "files", ToolInvalid, "different definitions under this name")
				if len(res.Tools) != 3 || files.Description != "Lists the files in a folder." {
					t.Errorf("%d tools; files says %q: want 3, the first definition shown", len(res.Tools), files.Description)
				}
				for _, desc := range []string{"Lists the files in a folder.", "Deletes the files in a folder."} {
					one, err := decodeTool(json.RawMessage(`{"description":"`+desc+`","inputSchema":{"type":"object"},"name":"files"}`), DefaultLimits)
					if err != nil || one.Pin == files.Pin {
						t.Errorf("Pin %s is that of one definition (%q, %v)", files.Pin, desc, err)
					}
				}
			}},
		{num: 33, name: "hostile-names", args: []string{"-tools", "2"}, message: []string{"tool without a name"}, max: 2 * time.Second,
			check: func(t *testing.T, res *Result, _ *Error) {
				checkTools(t, res.Tools[:2], 2)
				want := map[string]ToolState{
					`<script>alert(1)</script>`: ToolInvalid, `say "hi" it's`: ToolInvalid, "two\nlines": ToolInvalid,
					"../../etc/passwd": ToolInvalid, strings.Repeat("x", 10_000): ToolInvalid, "r\u0435ad_file": ToolInvalid,
					"good.name_1-ok": "",
				}
				for _, tool := range res.Tools[2:] {
					state, ok := want[tool.Name]
					if !ok || tool.State != state {
						t.Errorf("tool %.40q: State %q, Problems %q; want %q", tool.Name, tool.State, tool.Problems, state)
					}
					delete(want, tool.Name)
				}
				for name := range want {
					t.Errorf("tool %.40q missing", name)
				}
			}},
	} {
		t.Run(fmt.Sprintf("%02d %s", c.num, c.name), func(t *testing.T) { runHostile(t, c) })
	}
}

func TestJSONDepth(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `{}`: 1, `{"a":[1,{"b":2}]}`: 3, `["[[[", "{{"]`: 1, `{"a\"[":[]}`: 2,
		strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000): 50_000,
	} {
		if got := jsonDepth([]byte(in)); got != want {
			t.Errorf("jsonDepth(%.30q) = %d; want %d", in, got, want)
		}
	}
}

func TestResponseID(t *testing.T) {
	deep := strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000)
	for _, c := range []struct {
		line string
		want string // RequestId.String(), "" for none
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "int64:7"},
		{`{"jsonrpc":"2.0","result":{"x":` + deep + `},"id":"abc"}`, "string:abc"},
		{`{"result":{"id":1},"note":"\"id\":2", "id" : 3}`, "int64:3"},
		{`{"result":["id",{"id":4}]}`, ""},
		{`{"id":null,"error":{}}`, ""},
		{`{"id":`, ""},
		{`{"a":"unterminated`, ""},
		{`not json`, ""},
	} {
		id, ok := responseID([]byte(c.line))
		got := ""
		if ok {
			got = id.String()
		}
		if got != c.want {
			t.Errorf("responseID(%.60q) = %q, %v; want %q", c.line, got, ok, c.want)
		}
	}
}

func TestDisplayable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode and 日本語":  "plain text, ünïcode and 日本語",
		"\x1b[31mred\x1b[0m\r\nnext\t": `\x1b[31mred\x1b[0m\r\nnext\t`,
		"bidi \u202eexe.txt":           `bidi \u202eexe.txt`,
		"zero\u200bwidth \U000E0041":   `zero\u200bwidth \U000e0041`,
		"bad \xff\xfe bytes":           `bad \xff\xfe bytes`,
		`already "quoted" \x1b`:        `already "quoted" \x1b`,
	} {
		if got := displayable(in); got != want {
			t.Errorf("displayable(%q) = %q; want %q", in, got, want)
		}
	}
	long := strings.Repeat("x", maxMessageBytes+500)
	if got := displayable(long); !strings.HasPrefix(got, strings.Repeat("x", maxMessageBytes)) || !strings.HasSuffix(got, "… (500 more bytes)") {
		t.Errorf("displayable of %d bytes = %.40q…%q", len(long), got, got[len(got)-30:])
	}
}

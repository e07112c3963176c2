package gateway

import (
	"bytes"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

// peekCall tells, without decoding it, whether body is a JSON-RPC
// tools/call and of which tool: the top-level "method" and the "name" of
// the top-level "params" object, each a plain string. It is how a call of
// an offered tool, most of what agents send, skips this endpoint's own
// parse on its way to mcp-go, which parses it anyway (see Serve).
//
// ok is false for whatever it cannot tell at a glance, and the request is
// then parsed in full: an escape in a key or in those values, invalid
// UTF-8 in them, a key met twice (or in another case: encoding/json
// takes "Method" for "method"), a _meta anywhere (2026-07-28 requests
// carry one), or anything malformed. Being wrong would be harmless all the same: the call path
// checks the tool mcp-go dispatches (see find).
func peekCall(body []byte) (name string, ok bool) {
	if bytes.Contains(body, []byte(`_meta`)) {
		return "", false
	}
	p := peeker{b: body}
	var method, tool string
	var sawMethod, sawParams bool
	if !p.object(func(key string) bool {
		switch {
		case !exactKey(key, "method") || !exactKey(key, "params"):
			return false
		case key == "method":
			if sawMethod {
				return false
			}
			sawMethod = true
			method, ok = p.plainString()
			return ok
		case key == "params":
			if sawParams {
				return false
			}
			sawParams = true
			sawName := false
			return p.object(func(key string) bool {
				if !exactKey(key, "name") {
					return false
				}
				if key != "name" {
					return p.skipValue()
				}
				if sawName {
					return false
				}
				sawName = true
				tool, ok = p.plainString()
				return ok
			})
		}
		return p.skipValue()
	}) || !p.end() || method != "tools/call" || tool == "" {
		return "", false
	}
	return tool, true
}

// sessionCall is peekCall of a request that is not of 2026-07-28 by its
// header (a session's requests carry the version the session agreed on
// from 2025-06-18, which is no reason to parse them).
func sessionCall(h http.Header, body []byte) (name string, ok bool) {
	if mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion)) {
		return "", false
	}
	return peekCall(body)
}

// exactKey reports false for a key that encoding/json would take for
// want (it matches keys regardless of case) but that is not want itself.
func exactKey(key, want string) bool { return key == want || !strings.EqualFold(key, want) }

// peeker reads JSON from b at i, for peekCall: every method reports false
// on input it does not take.
type peeker struct {
	b []byte
	i int
}

func (p *peeker) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *peeker) byte(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (p *peeker) end() bool {
	p.space()
	return p.i == len(p.b)
}

// plainString reads a string without escapes or control characters.
func (p *peeker) plainString() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, utf8.ValidString(s) // encoding/json would read U+FFFD
		case c == '\\' || c < 0x20:
			return "", false
		}
	}
	return "", false
}

// object reads an object, calling member with each key, positioned at
// its value, which member must read.
func (p *peeker) object(member func(key string) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	for {
		key, ok := p.plainString()
		if !ok || !p.byte(':') || !member(key) {
			return false
		}
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// skipValue passes over any value: strings (escapes and all), nested
// objects and arrays by their brackets, and literals and numbers up to
// what ends them. It does not check what it passes over: mcp-go does.
func (p *peeker) skipValue() bool {
	p.space()
	depth := 0
	for p.i < len(p.b) {
		switch c := p.b[p.i]; c {
		case '"':
			p.i++
			for p.i < len(p.b) && p.b[p.i] != '"' {
				if p.b[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			if p.i >= len(p.b) {
				return false
			}
			p.i++
		case '{', '[':
			depth++
			p.i++
		case '}', ']':
			if depth == 0 {
				return true // the end of the container holding the value
			}
			depth--
			p.i++
		case ',':
			if depth == 0 {
				return true
			}
			p.i++
		default:
			p.i++
		}
		if depth == 0 {
			// A string, or a container just closed, or a literal
			// character: a literal runs on to a delimiter.
			p.space()
			if p.i < len(p.b) && (p.b[p.i] == ',' || p.b[p.i] == '}' || p.b[p.i] == ']') {
				return true
			}
		}
	}
	return false
}

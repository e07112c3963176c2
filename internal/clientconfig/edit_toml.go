package clientconfig

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Editing Codex's config.toml. An entry is its [mcp_servers.NAME] table
// and that table's sub-tables ([mcp_servers.NAME.env], …), together or
// apart; each is a span of lines of the text, from its header to the next
// table (less the comments right above that table's header, which are
// the next table's). An entry written any other way (NAME = {…} under
// [mcp_servers], dotted keys mcp_servers.NAME.x = … elsewhere,
// [[mcp_servers.NAME]]) is left for a person to edit.

// tomlSection is one table of a TOML text, or the keys before the first
// table.
type tomlSection struct {
	path       []string   // the table's name; nil for the keys before the first table
	array      bool       // an array of tables, [[path]]
	start      int        // offset of the first line of the comments right above the header, or of the header's line
	header     int        // offset of the header's line (start, for the keys before the first table)
	contentEnd int        // offset after its last line that is not blank
	end        int        // offset where the next section starts, or len(data)
	keys       [][]string // the full paths of its keys, inline tables' keys included
	keyAt      []int      // the offsets of those keys
}

// tomlSections splits data, which must be valid TOML, into its sections.
func tomlSections(data []byte) ([]tomlSection, error) {
	ls := newLines(data)
	after := func(line int) int { // the offset after a line
		if line+1 < len(ls.starts) {
			return ls.starts[line+1]
		}
		return len(data)
	}
	secs := []tomlSection{{}}
	last := -1         // the current section's last line with its header, a key or a comment before a key
	var comments []int // the lines of the comments after that
	finish := func(end int) {
		cur := &secs[len(secs)-1]
		for _, l := range comments {
			if ls.starts[l] < end {
				last = max(last, l)
			}
		}
		cur.contentEnd, cur.end = cur.header, end
		if last >= 0 {
			cur.contentEnd = after(last)
		}
	}
	p := unstable.Parser{KeepComments: true}
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Comment:
			comments = append(comments, ls.index(int(e.Raw.Offset)))
		case unstable.KeyValue:
			cur := &secs[len(secs)-1]
			walkKeys(cur.path, nil, e, func(path []string, offs []int) {
				cur.keys = append(cur.keys, path)
				cur.keyAt = append(cur.keyAt, offs[0])
			})
			for _, l := range comments {
				last = max(last, l)
			}
			last, comments = max(last, ls.index(int(e.Raw.Offset+e.Raw.Length)-1)), nil
		case unstable.Table, unstable.ArrayTable:
			path, offs := keyPath(e.Key())
			h := ls.index(offs[0])
			first := h // the comments right above the header go with it
			for k := len(comments) - 1; k >= 0 && comments[k] == first-1; k-- {
				first--
			}
			finish(ls.starts[first])
			secs = append(secs, tomlSection{path: path, array: e.Kind == unstable.ArrayTable, start: ls.starts[first], header: ls.starts[h]})
			last, comments = h, nil
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	finish(len(data))
	return secs, nil
}

// codexEntry finds the sections of the entry called name (indexes into
// secs, in file order). An entry written in a form only a person can edit
// safely is an error.
func codexEntry(data []byte, name string) (secs []tomlSection, entry []int, err error) {
	secs, err = tomlSections(data)
	if err != nil {
		return nil, nil, err
	}
	isEntry := func(path []string) bool {
		return len(path) >= 2 && path[0] == "mcp_servers" && path[1] == name
	}
	unsafe := func(off int, how string) error {
		return fmt.Errorf("%s: the codex entry %q is written %s, which cannot be changed safely here: edit the file by hand", newLines(data).pos(off), name, how)
	}
	for i, sec := range secs {
		switch {
		case isEntry(sec.path) && sec.array:
			return nil, nil, unsafe(sec.header, "as an array of tables ([[…]])")
		case isEntry(sec.path):
			entry = append(entry, i)
			continue
		}
		for k, key := range sec.keys {
			if isEntry(key) {
				return nil, nil, unsafe(sec.keyAt[k], "as an inline table or with dotted keys")
			}
		}
	}
	return secs, entry, nil
}

func setCodex(data []byte, s Server) ([]byte, error) {
	if _, err := readCodex(data); err != nil {
		return nil, err
	}
	secs, entry, err := codexEntry(data, s.Name)
	if err != nil {
		return nil, err
	}
	eol := lineEnding(data)
	var b strings.Builder
	writeCodexEntry(&b, s)
	text := withEOL([]byte(b.String()), eol)
	var edits []textEdit
	if len(entry) > 0 {
		// The entry's first tables, one right after the other, are replaced
		// as one; its tables elsewhere go.
		n := 1
		for n < len(entry) && entry[n] == entry[n-1]+1 && secs[entry[n-1]].end == secs[entry[n]].header {
			n++
		}
		edits = append(edits, textEdit{secs[entry[0]].header, secs[entry[n-1]].contentEnd, text})
		edits = append(edits, removals(data, secs, entry[n:])...)
	} else {
		// After the last table of mcp_servers, or at the end.
		at := len(data)
		for _, sec := range secs {
			if len(sec.path) > 0 && sec.path[0] == "mcp_servers" {
				at = sec.contentEnd
			}
		}
		var pre string
		switch {
		case at == 0:
		case data[at-1] != '\n':
			pre = eol + eol
		case at < len(data) || !blankLineBefore(data, at):
			pre = eol
		}
		edits = append(edits, textEdit{at, at, slices.Concat([]byte(pre), text)})
	}
	return applyCodex(data, edits)
}

func removeCodex(data []byte, name string) ([]byte, bool, error) {
	if _, err := readCodex(data); err != nil {
		return nil, false, err
	}
	secs, entry, err := codexEntry(data, name)
	if err != nil || len(entry) == 0 {
		return nil, false, err
	}
	out, err := applyCodex(data, removals(data, secs, entry))
	return out, err == nil, err
}

// textEdit replaces data[from:to] with text.
type textEdit struct {
	from, to int
	text     []byte
}

// removals are the edits that remove the sections (indexes into secs, in
// file order) but for the comments right above their headers. A removal
// that reaches the end of the text takes the blank lines before it too.
func removals(data []byte, secs []tomlSection, which []int) []textEdit {
	var edits []textEdit
	for _, i := range which {
		from, to := secs[i].header, secs[i].end
		if n := len(edits); n > 0 && edits[n-1].to == from {
			edits[n-1].to = to
			continue
		}
		edits = append(edits, textEdit{from: from, to: to})
	}
	if n := len(edits); n > 0 && edits[n-1].to == len(data) {
		for from := edits[n-1].from; from > 0 && blankLineBefore(data, from); {
			from = bytes.LastIndexByte(data[:from-1], '\n') + 1
			edits[n-1].from = from
		}
	}
	return edits
}

// blankLineBefore says whether the line that ends just before offset at
// (the start of a line) holds only spaces.
func blankLineBefore(data []byte, at int) bool {
	start := bytes.LastIndexByte(data[:at-1], '\n') + 1
	return onlySpace(data[start:at])
}

// applyCodex applies the edits (in order, not overlapping) and checks that
// the result still reads as TOML.
func applyCodex(data []byte, edits []textEdit) ([]byte, error) {
	var out []byte
	prev := 0
	for _, e := range edits {
		out = append(append(out, data[prev:e.from]...), e.text...)
		prev = e.to
	}
	out = append(out, data[prev:]...)
	if _, err := readCodex(out); err != nil {
		return nil, fmt.Errorf("the edit would break the file (%v): edit it by hand", err)
	}
	return out, nil
}

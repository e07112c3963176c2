package views

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Segment is a piece of text as the review view shows it: either text as
// it is, or characters a reader would not see (or would see wrongly),
// made visible with a label saying what they are.
type Segment struct {
	Text   string // shown as is (escaped by templ)
	Hidden string // a label for hidden characters; Text is empty then
}

// spaceRun is how many spaces in a row count as hiding something (text
// pushed out of view).
const spaceRun = 20

// Reveal splits s into segments, making hidden characters visible:
// Unicode tag characters (which can spell out invisible ASCII, shown
// decoded), bidirectional controls (which reorder what is displayed),
// zero-width and other format characters, control characters other than
// newline and tab, invalid UTF-8 and long runs of spaces. hidden reports
// whether there was any.
func Reveal(s string) (segs []Segment, hidden bool) {
	if plain(s) {
		return []Segment{{Text: s}}, false
	}
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			segs = append(segs, Segment{Text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			flush()
			segs = append(segs, Segment{Hidden: fmt.Sprintf("invalid byte 0x%02X", s[i])})
			i++
			continue
		case isTag(r):
			// A run of tag characters: decode the ASCII they carry.
			var carried strings.Builder
			j := i
			for j < len(s) {
				r2, size2 := utf8.DecodeRuneInString(s[j:])
				if !isTag(r2) {
					break
				}
				if r2 >= 0xE0020 && r2 <= 0xE007E {
					carried.WriteRune(r2 - 0xE0000)
				}
				j += size2
			}
			flush()
			segs = append(segs, Segment{Hidden: fmt.Sprintf("hidden tag text: %q", carried.String())})
			i = j
			continue
		case r == ' ' && strings.HasPrefix(s[i:], strings.Repeat(" ", spaceRun)):
			j := i
			for j < len(s) && s[j] == ' ' {
				j++
			}
			flush()
			segs = append(segs, Segment{Hidden: fmt.Sprintf("%d spaces", j-i)})
			i = j
			continue
		case isInvisible(r):
			flush()
			segs = append(segs, Segment{Hidden: fmt.Sprintf("U+%04X %s", r, invisibleName(r))})
		default:
			text.WriteString(s[i : i+size])
		}
		i += size
	}
	flush()
	for _, seg := range segs {
		if seg.Hidden != "" {
			hidden = true
		}
	}
	return segs, hidden
}

// plain reports, cheaply, that s has nothing to reveal: printable ASCII,
// newlines and tabs only, and no long run of spaces.
func plain(s string) bool {
	spaces := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' {
			if spaces++; spaces >= spaceRun {
				return false
			}
			continue
		}
		spaces = 0
		if (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7F {
			return false
		}
	}
	return true
}

func isTag(r rune) bool { return r >= 0xE0000 && r <= 0xE007F }

// isInvisible reports characters that do not show as themselves: format
// characters (bidi controls, zero-width ones, BOM), controls other than
// newline and tab, and the private-use and unassigned-looking variation
// selectors.
func isInvisible(r rune) bool {
	if r == '\n' || r == '\t' {
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.IsControl(r) || unicode.Is(unicode.Variation_Selector, r)
}

// invisibleName names the characters most used to hide or reorder text.
func invisibleName(r rune) string {
	switch r {
	case 0x200B:
		return "zero width space"
	case 0x200C:
		return "zero width non-joiner"
	case 0x200D:
		return "zero width joiner"
	case 0x200E:
		return "left-to-right mark"
	case 0x200F:
		return "right-to-left mark"
	case 0x202A:
		return "left-to-right embedding"
	case 0x202B:
		return "right-to-left embedding"
	case 0x202C:
		return "pop directional formatting"
	case 0x202D:
		return "left-to-right override"
	case 0x202E:
		return "right-to-left override"
	case 0x2066:
		return "left-to-right isolate"
	case 0x2067:
		return "right-to-left isolate"
	case 0x2068:
		return "first strong isolate"
	case 0x2069:
		return "pop directional isolate"
	case 0x2060:
		return "word joiner"
	case 0xFEFF:
		return "zero width no-break space"
	case 0x061C:
		return "arabic letter mark"
	}
	if unicode.IsControl(r) {
		return "control character"
	}
	return "invisible character"
}

// injectionMarkers are phrases and pseudo-tags that tool-poisoning
// descriptions use to address the model rather than the person.
var injectionMarkers = regexp.MustCompile(`(?i)` +
	`<\s*/?\s*(important|system|instructions?|secret|hidden)\b` +
	`|ignore\s+(all\s+)?(the\s+)?(previous|prior|above|earlier)\s+(instructions|prompts?|messages?)` +
	`|do\s+not\s+(tell|mention|inform|reveal|show)\s+(this\s+)?(to\s+)?the\s+user` +
	`|before\s+using\s+this\s+tool[, ]+(you\s+must\s+)?(read|send|include)` +
	`|~/\.ssh|id_rsa|\.env\b|mcp\.json`)

// markerHints are substrings (lower case) every marker contains one of,
// checked before the regular expression, which is slower.
var markerHints = []string{"<", "ignore", "do not", "before using", "~/.ssh", "id_rsa", ".env", "mcp.json"}

func mayHoldMarker(s string) bool {
	lower := strings.ToLower(s)
	for _, h := range markerHints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// InjectionMarkers returns the distinct marker phrases found in s, in the
// order they first appear, for the review view to flag. Text spelled in
// invisible tag characters is read as the ASCII it carries, so hidden
// instructions are flagged too.
func InjectionMarkers(s string) []string {
	s = untag(s)
	if !mayHoldMarker(s) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range injectionMarkers.FindAllString(s, 20) {
		key := strings.ToLower(m)
		if !seen[key] {
			seen[key] = true
			out = append(out, m)
		}
	}
	return out
}

// untag replaces each Unicode tag character that carries an ASCII
// character with that character.
func untag(s string) string {
	if !strings.ContainsFunc(s, isTag) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r >= 0xE0020 && r <= 0xE007E {
			return r - 0xE0000
		}
		return r
	}, s)
}

func reveal(s string) []Segment {
	segs, _ := Reveal(s)
	return segs
}

// HasHidden reports whether the tool's name, title or description holds
// characters a reader would not see.
func (t ToolItem) HasHidden() bool {
	for _, s := range []string{t.Name, t.Title, t.Description} {
		if _, hidden := Reveal(s); hidden {
			return true
		}
	}
	return false
}

// InjectionMarkers returns the prompt-injection markers in the tool's
// title and description.
func (t ToolItem) InjectionMarkers() []string {
	return InjectionMarkers(t.Title + "\n" + t.Description)
}

// DefinitionFlags are why a definition's name, title and description need
// a second look before a person approves it: the prompt-injection
// markers in its title and description, and whether any of the three
// hides characters (see Reveal).
func DefinitionFlags(name, title, description string) (markers []string, hidden bool) {
	markers = InjectionMarkers(title + "\n" + description)
	for _, s := range []string{name, title, description} {
		if _, h := Reveal(s); h {
			hidden = true
		}
	}
	return markers, hidden
}

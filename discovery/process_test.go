package discovery

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestCapWarnings(t *testing.T) {
	var ws []string
	for i := range 60 {
		ws = append(ws, fmt.Sprint("warning ", i))
	}
	got := capWarnings(slices.Clone(ws), 48)
	if len(got) != 48 || !slices.Equal(got[:47], ws[:47]) || got[47] != "… and 13 more warnings" {
		t.Errorf("capWarnings(60 warnings, 48) = %d warnings ending %q", len(got), got[len(got)-1])
	}
	if got := capWarnings(ws[:48], 48); !slices.Equal(got, ws[:48]) {
		t.Errorf("capWarnings(48 warnings, 48) changed them: %q", got)
	}
}

func TestChildEnv(t *testing.T) {
	env := childEnv(func(k string) string {
		return map[string]string{"PATH": "/bin", "HOME": "/h", "SWITCHBOARD_TOKEN": "x"}[k]
	}, map[string]string{"A": "1", "HOME": "/own"})
	want := []string{"A=1", "HOME=/own", "PATH=/bin"}
	if !slices.Equal(env, want) {
		t.Errorf("childEnv = %q, want %q", env, want)
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("0123456789\n01234567890\nlast"), 16)
	if l, err := readLine(r, 10); err != nil || string(l) != "0123456789" {
		t.Errorf("line at the limit: %q, %v", l, err)
	}
	var tooLarge errTooLarge
	if _, err := readLine(r, 10); !errors.As(err, &tooLarge) {
		t.Errorf("line over the limit: %v", err)
	}
	// Lines longer than the reader's buffer are assembled.
	r = bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 100)+"\nend"), 16)
	if l, err := readLine(r, 100); err != nil || len(l) != 100 {
		t.Errorf("long line: %d bytes, %v", len(l), err)
	}
	if l, err := readLine(r, 100); err != nil || string(l) != "end" {
		t.Errorf("last line without newline: %q, %v", l, err)
	}
	if _, err := readLine(r, 100); !errors.Is(err, io.EOF) {
		t.Errorf("at EOF: %v", err)
	}
	// A last line without a newline has the same limit, whether it fits
	// the reader's buffer or not.
	for _, size := range []int{16, 4096} {
		r = bufio.NewReaderSize(strings.NewReader("0123456789"), size)
		if l, err := readLine(r, 10); err != nil || string(l) != "0123456789" {
			t.Errorf("buffer %d: last line at the limit: %q, %v", size, l, err)
		}
		r = bufio.NewReaderSize(strings.NewReader("0123456789X"), size)
		if l, err := readLine(r, 10); !errors.As(err, &tooLarge) {
			t.Errorf("buffer %d: last line of 11 bytes with limit 10 = %q, %v; want too large", size, l, err)
		}
	}
}

func TestSample(t *testing.T) {
	ascii := strings.Repeat("a", sampleBytes-1)
	for _, c := range []struct {
		name, in, want string
		secrets        []string
	}{
		{"short", "hello", "hello", nil},
		{"cut", strings.Repeat("b", 200), strings.Repeat("b", sampleBytes), nil},
		// "é" takes bytes 119 and 120: the cut falls before it, not in it.
		{"rune at the end", ascii + "é and more", ascii, nil},
		{"not UTF-8", "\xff\xfe ok", "\uFFFD ok", nil},
		{"continuation bytes at the end", ascii + "\x80\x80\x80\x80", ascii + "\uFFFD", nil},
		// Redacted before the cut: nothing of the secret is left.
		{"secret at the end", ascii[:111] + "topsecret-0123456789", ascii[:111] + "[redacted", []string{"topsecret-0123456789"}},
		{"3-byte rune at the end", ascii[:118] + "日本", ascii[:118], nil},
		{"4-byte rune before the end", ascii[:116] + "😀日", ascii[:116] + "😀", nil},
		{"secret with a quote", `say "x"` + `pw"q\ü!` + " ok", `say "x"[redacted] ok`, []string{`pw"q\ü!`}},
	} {
		if got := sample([]byte(c.in), c.secrets); got != c.want {
			t.Errorf("%s: sample(%q) = %q; want %q", c.name, c.in, got, c.want)
		}
	}
	if got := quote(`id "pw"q\ü!" end`, []string{`pw"q\ü!`}); got != `"id \"[redacted]\" end"` {
		t.Errorf("quote = %s", got)
	}
}

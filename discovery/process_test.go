package discovery

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// TestTailRedacted: a tail that starts in the middle of a line may start
// in the middle of a secret; the end of it is redacted too.
func TestTailRedacted(t *testing.T) {
	const secret = "topsecret-0123456789"
	secrets := []string{secret, "other-secret"}
	tl := newTail(35)
	fmt.Fprint(tl, "xxxxxx"+secret+" and "+secret) // 51 bytes; the kept 35 start with "0123456789 and "
	if got, want := tl.redacted(secrets), "[redacted] and [redacted]"; got != want {
		t.Errorf("redacted() = %q; want %q", got, want)
	}
	// From a line boundary, or without anything dropped, the start is
	// the start of what was written.
	tl = newTail(40)
	fmt.Fprint(tl, "6789 first\n6789 second "+secret)
	if got, want := tl.redacted(secrets), "6789 second [redacted]"; got != want {
		t.Errorf("redacted() = %q; want %q", got, want)
	}
	tl = newTail(40)
	fmt.Fprint(tl, "6789 is not a secret")
	if got, want := tl.redacted(secrets), "6789 is not a secret"; got != want {
		t.Errorf("redacted() = %q; want %q", got, want)
	}
}

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

func TestTail(t *testing.T) {
	tl := newTail(10)
	fmt.Fprint(tl, "abc\n")
	if got := tl.String(); got != "abc\n" {
		t.Errorf("%q", got)
	}
	fmt.Fprint(tl, "defgh\nij")
	// 12 bytes written, 10 kept: "c\ndefgh\nij" → from the first line break.
	if got := tl.String(); got != "defgh\nij" {
		t.Errorf("after overflow: %q", got)
	}
	n, err := tl.Write([]byte("0123456789ABCDEF\nxyz"))
	if n != 20 || err != nil {
		t.Errorf("Write = %d, %v", n, err)
	}
	if got := tl.String(); got != "xyz" {
		t.Errorf("after a big write: %q", got)
	}
	// A kept part without a line break is shown as is.
	tl = newTail(4)
	fmt.Fprint(tl, "abcdefgh")
	if got := tl.String(); got != "efgh" {
		t.Errorf("no newline: %q", got)
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

func TestForbiddenAddresses(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254":        true,
		"::ffff:169.254.169.254": true,
		"fe80::1":                true,
		"fd00:ec2::254":          true,
		"100.100.100.200":        true,
		"127.0.0.1":              false,
		"10.0.0.1":               false,
		"::1":                    false,
		"93.184.216.34":          false,
	} {
		if got := forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("forbidden(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	target := Target{Env: map[string]string{"K": "hunter22", "SHORT": "ab"}, Headers: map[string]string{"Authorization": "Bearer tok-1234"}}
	got := redact("pw hunter22, auth Bearer tok-1234, ab", target.secrets())
	if got != "pw [redacted], auth [redacted], ab" {
		t.Errorf("redact = %q", got)
	}
}

package discovery

import (
	"fmt"
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

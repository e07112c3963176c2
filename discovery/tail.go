package discovery

import (
	"strings"
	"sync"
)

// The stderr of a stdio server goes to a tail: the last bytes it wrote,
// bounded, and shown redacted.

// tail keeps the last cap bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	cap int
	cut bool
}

func newTail(n int) *tail { return &tail{cap: n} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(b)
	if len(b) >= t.cap {
		b = b[len(b)-t.cap:]
		t.buf = t.buf[:0]
		t.cut = true
	} else if over := len(t.buf) + len(b) - t.cap; over > 0 {
		t.buf = t.buf[over:]
		t.cut = true
	}
	t.buf = append(t.buf, b...)
	return n, nil
}

// String returns the kept bytes, starting at a line boundary when earlier
// output was dropped.
func (t *tail) String() string {
	s, _ := t.text()
	return s
}

// text is String, and whether it starts in the middle of a line (output
// was dropped, and no line break was kept to start after).
func (t *tail) text() (s string, partial bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s = string(t.buf)
	if t.cut {
		if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
			return s[i+1:], false
		}
		return s, true
	}
	return s, false
}

// minSecretPart is the shortest end of a secret that redacted removes
// from the start of a tail that starts in the middle of a line: shorter
// ends tell next to nothing, and would be found everywhere.
const minSecretPart = 4

// redacted is String with the secrets redacted, also the end of one whose
// start was dropped with the output before the tail.
func (t *tail) redacted(secrets []string) string {
	s, partial := t.text()
	s = redact(s, secrets)
	if !partial {
		return s
	}
	for _, v := range secrets {
		for k := len(v) - 1; k >= minSecretPart; k-- {
			if strings.HasPrefix(s, v[len(v)-k:]) {
				return "[redacted]" + s[k:]
			}
		}
	}
	return s
}

package session

import (
	"os"
	"strings"
	"sync"
)

// Token is the API token: one set at start, or one kept in a file that
// `switchboard token --rotate` rewrites, which replaces it at once.
type Token struct {
	path  string
	mu    sync.Mutex
	value string
	file  os.FileInfo // of the file value was read from
}

// NewToken is the token value; if path is set, the token is whatever the
// file at path holds, re-read whenever the file is replaced or changes,
// and value only until then. A file that is gone or empty keeps the last
// token: only a new token ends the old one.
func NewToken(value, path string) *Token { return &Token{value: value, path: path} }

// Valid reports whether t is the current token, in constant time.
func (k *Token) Valid(t string) bool {
	cur := k.Current()
	return t != "" && cur != "" && equal(t, cur)
}

// Current is the current token.
func (k *Token) Current() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.path == "" {
		return k.value
	}
	fi, err := os.Stat(k.path)
	if err != nil || (k.file != nil && os.SameFile(fi, k.file) && fi.ModTime().Equal(k.file.ModTime()) && fi.Size() == k.file.Size()) {
		return k.value
	}
	b, err := os.ReadFile(k.path)
	if v := strings.TrimSpace(string(b)); err == nil && v != "" {
		k.value, k.file = v, fi
	}
	return k.value
}

// Package bodycache keeps JSON answers of the API rendered once per store
// revision, with their ETags.
package bodycache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/web/internal/reclaim"
)

// Revisioner is the store as the cache sees it: its revision moves with
// every change.
type Revisioner interface{ Revision() string }

// Cache holds JSON bodies, each as rendered at one store revision: the
// catalog, and each server's tools under the server's id.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*cachedBody
}

// cachedBody is one body; its mutex makes concurrent callers of a stale
// entry wait for one rendering.
type cachedBody struct {
	mu   sync.Mutex
	rev  string
	body []byte
	etag string
	// until, if set, is when the body goes out of date by the clock.
	until time.Time
}

// Get returns the body under key at the store's current revision (or a
// newer one), rendering it only when the store changed since the last
// call, or the clock passed the time render said the body would be out
// of date at. render writes the body and returns the revision it read
// (and that time, or zero); its buffer starts sized like the last body. An entry whose rendering fails
// (a server that does not exist) is dropped, so that requests for made-up
// ids cannot grow the cache.
func (bc *Cache) Get(st Revisioner, key string, now func() time.Time, render func(*bytes.Buffer) (string, time.Time, error)) (body []byte, etag string, err error) {
	bc.mu.Lock()
	if bc.entries == nil {
		bc.entries = map[string]*cachedBody{}
	}
	e := bc.entries[key]
	if e == nil {
		e = &cachedBody{}
		bc.entries[key] = e
	}
	bc.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.body != nil && e.rev == st.Revision() && (e.until.IsZero() || now().Before(e.until)) {
		return e.body, e.etag, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(e.body) + len(e.body)/8 + 64)
	rev, until, err := render(&buf)
	if err != nil {
		bc.mu.Lock()
		if bc.entries[key] == e {
			delete(bc.entries, key)
		}
		bc.mu.Unlock()
		e.body = nil
		return nil, "", err
	}
	sum := sha256.Sum256(buf.Bytes())
	// Kept exact: a first render's buffer grew to up to twice the body.
	e.rev, e.body, e.etag, e.until = rev, bytes.Clone(buf.Bytes()), `"`+hex.EncodeToString(sum[:16])+`"`, until
	reclaim.After(2 * len(e.body)) // the render's garbage: the buffer, and what it was made of
	return e.body, e.etag, nil
}

package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
)

// Browser sessions are kept by the hash of their secret, never the
// secret; they survive a reopen; a touch moves only the last use; an
// expired one is forgotten when the next is created; one or all can be
// forgotten; none of it moves the revision or reaches subscribers.
func testBrowserSessions(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	if _, err := db.Session(ctx, store.HashToken("nobody")); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("Session of a new store = %v; want ErrSessionNotFound", err)
	}
	secretA, a := store.NewBrowserSession("Firefox", At(1), time.Hour)
	secretB, b := store.NewBrowserSession("Chrome", At(2), 24*time.Hour)
	for _, s := range []store.BrowserSession{a, b} {
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatalf("CreateSession(%s) = %v", s.Agent, err)
		}
	}
	if got, err := db.Session(ctx, store.HashToken(secretA)); err != nil || !sameSession(got, a) {
		t.Errorf("Session(hash of A) = %+v, %v; want %+v", got, err, a)
	}
	if got, err := db.Session(ctx, secretA); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("Session(the secret itself) = %+v, %v; want ErrSessionNotFound: only hashes are keys", got, err)
	}
	if strings.Contains(fmt.Sprint(a, b), secretA) || strings.Contains(fmt.Sprint(a, b), secretB) {
		t.Errorf("kept %+v, %+v; want hashes, never the secrets", a, b)
	}
	if err := db.TouchSession(ctx, a.Hash, At(3)); err != nil {
		t.Fatalf("TouchSession = %v", err)
	}
	if err := db.TouchSession(ctx, store.HashToken("nobody"), At(3)); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("TouchSession of none = %v; want ErrSessionNotFound", err)
	}
	want := a
	want.LastSeen = At(3)
	if got, err := db.Session(ctx, a.Hash); err != nil || !sameSession(got, want) {
		t.Errorf("Session after TouchSession = %+v, %v; want %+v", got, err, want)
	}

	db = be.Reopen(t, db)
	var heard []store.Change
	cancel := db.Subscribe(func(c store.Change) { heard = append(heard, c) })
	defer cancel()
	rev := db.Revision()
	if got, err := db.Session(ctx, a.Hash); err != nil || !sameSession(got, want) {
		t.Errorf("Session after reopening = %+v, %v; want %+v", got, err, want)
	}

	// A expires an hour after At(1); creating C two hours later prunes it.
	_, c := store.NewBrowserSession("Safari", At(1).Add(2*time.Hour), time.Hour)
	if !a.Expired(c.CreatedAt) || b.Expired(c.CreatedAt) {
		t.Fatalf("Expired: A %v, B %v at %v; want A only", a.Expired(c.CreatedAt), b.Expired(c.CreatedAt), c.CreatedAt)
	}
	if err := db.CreateSession(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Session(ctx, a.Hash); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("expired session after the next was created = %v; want ErrSessionNotFound (pruned)", err)
	}
	if _, err := db.Session(ctx, b.Hash); err != nil {
		t.Errorf("unexpired session after the next was created = %v; want kept", err)
	}

	if err := db.DeleteSession(ctx, b.Hash); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteSession(ctx, b.Hash); err != nil {
		t.Errorf("DeleteSession of one not kept = %v; want nil", err)
	}
	if _, err := db.Session(ctx, b.Hash); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("Session after DeleteSession = %v; want ErrSessionNotFound", err)
	}
	_, d := store.NewBrowserSession("", At(1).Add(2*time.Hour), time.Hour)
	if err := db.CreateSession(ctx, d); err != nil {
		t.Fatal(err)
	}
	if n, err := db.DeleteSessions(ctx); n != 2 || err != nil {
		t.Errorf("DeleteSessions = %d, %v; want 2 (C and D), nil", n, err)
	}
	for _, s := range []store.BrowserSession{c, d} {
		if _, err := db.Session(ctx, s.Hash); !errors.Is(err, store.ErrSessionNotFound) {
			t.Errorf("Session(%s) after DeleteSessions = %v; want ErrSessionNotFound", s.Agent, err)
		}
	}
	if n, err := db.DeleteSessions(ctx); n != 0 || err != nil {
		t.Errorf("DeleteSessions of none = %d, %v; want 0, nil", n, err)
	}
	if err := db.TouchSession(ctx, c.Hash, At(10)); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("TouchSession after DeleteSessions = %v; want ErrSessionNotFound", err)
	}
	if _, e := store.NewBrowserSession("", At(11), time.Hour); db.CreateSession(ctx, e) != nil {
		t.Error("CreateSession after DeleteSessions failed")
	}
	if len(heard) != 0 {
		t.Errorf("subscribers heard %+v; want nothing: sessions are not catalog changes", heard)
	}
	if got := db.Revision(); got != rev {
		t.Errorf("Revision after session changes = %q; want %q (unchanged)", got, rev)
	}
}

// sameSession compares sessions, times by instant.
func sameSession(a, b store.BrowserSession) bool {
	return a.Hash == b.Hash && a.Agent == b.Agent && a.CreatedAt.Equal(b.CreatedAt) && a.LastSeen.Equal(b.LastSeen) && a.Expires.Equal(b.Expires)
}

// Agents' MCP sessions are kept by the hash of their id, with their
// initialize as sent; they survive a reopen; putting one forgets those
// unused since the time given; one can be forgotten; none of it moves
// the revision.
func testMCPSessions(t *testing.T, be Backend) {
	ctx := t.Context()
	db := be.Open(t)
	if _, err := db.MCPSession(ctx, store.HashToken("sb-none")); !errors.Is(err, store.ErrSessionNotFound) {
		t.Fatalf("MCPSession of a new store = %v; want ErrSessionNotFound", err)
	}
	init := json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"agent","version":"1"}}`)
	a := store.MCPSession{Hash: store.HashToken("sb-a"), TokenID: "c1", Init: init, Started: At(1), LastUsed: At(10)}
	b := store.MCPSession{Hash: store.HashToken("sb-b"), Init: init, Started: At(2), LastUsed: At(20)}
	for _, s := range []store.MCPSession{a, b} {
		if err := db.PutMCPSession(ctx, s, At(0)); err != nil {
			t.Fatalf("PutMCPSession = %v", err)
		}
	}
	db = be.Reopen(t, db)
	rev := db.Revision()
	got, err := db.MCPSession(ctx, a.Hash)
	if err != nil || got.TokenID != "c1" || !got.LastUsed.Equal(At(10)) || !got.Started.Equal(At(1)) {
		t.Fatalf("MCPSession(a) after reopening = %+v, %v", got, err)
	}
	var in, want any
	json.Unmarshal(got.Init, &in)
	json.Unmarshal(init, &want)
	if !reflect.DeepEqual(in, want) {
		t.Errorf("Init = %s; want %s", got.Init, init)
	}
	// b again, later: a, unused since before 15, is forgotten.
	b.LastUsed = At(30)
	if err := db.PutMCPSession(ctx, b, At(15)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.MCPSession(ctx, a.Hash); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("a session unused since before the cut = %v; want it forgotten", err)
	}
	if got, err := db.MCPSession(ctx, b.Hash); err != nil || !got.LastUsed.Equal(At(30)) {
		t.Errorf("MCPSession(b) = %+v, %v; want it replaced", got, err)
	}
	if err := db.DeleteMCPSession(ctx, b.Hash); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteMCPSession(ctx, b.Hash); err != nil {
		t.Errorf("DeleteMCPSession of none = %v; want nil", err)
	}
	if _, err := db.MCPSession(ctx, b.Hash); !errors.Is(err, store.ErrSessionNotFound) {
		t.Errorf("after DeleteMCPSession = %v; want ErrSessionNotFound", err)
	}
	if db.Revision() != rev {
		t.Errorf("MCP sessions moved the revision")
	}
}

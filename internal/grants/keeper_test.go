package grants

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

// Hostile #43: an authorization server that refuses refresh, or a server
// deleted or disabled while its tokens are held.

// tokenEndpoint is an authorization server's token endpoint that answers
// with answer and counts the requests it gets.
type tokenEndpoint struct {
	*httptest.Server
	hits   atomic.Int32
	answer atomic.Value // func(http.ResponseWriter)
}

func newTokenEndpoint(t *testing.T) *tokenEndpoint {
	te := &tokenEndpoint{}
	te.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		te.hits.Add(1)
		te.answer.Load().(func(http.ResponseWriter))(w)
	}))
	t.Cleanup(te.Close)
	te.set(http.StatusServiceUnavailable, `{"error":"temporarily_unavailable"}`)
	return te
}

func (te *tokenEndpoint) set(status int, body string) {
	te.answer.Store(func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	})
}

// keeperWith returns a token keeper over a real store holding the
// remote server s1 with a grant whose access token is expired (or
// expires in left), refreshed at te; now is the keeper's clock.
func keeperWith(t *testing.T, te *tokenEndpoint, left time.Duration) (*Keeper, *bolt.DB, *time.Time) {
	ctx := t.Context()
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "sb.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.CreateServer(ctx, store.Server{ID: "s1", Name: "s1", Transport: store.TransportHTTP, URL: te.URL + "/mcp", DefaultPolicy: store.PolicyAsk, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	g := store.Grant{Issuer: te.URL, TokenEndpoint: te.URL + "/token", Resource: te.URL + "/mcp", ClientID: "c1", AuthMethod: "none",
		AccessToken: "old-access", RefreshToken: "old-refresh", SavedAt: now.Add(-time.Hour), ExpiresAt: now.Add(left)}
	if err := db.SaveGrant(ctx, "s1", g); err != nil {
		t.Fatal(err)
	}
	k := NewKeeper(db, discovery.NewVerifier(discovery.Limits{}, nil))
	k.now = func() time.Time { return now }
	return k, db, &now
}

// A token endpoint that fails gets one refresh per backoff step, however
// many requests want the token; the token still valid serves meanwhile.
func TestRefreshBackoffNoStorm(t *testing.T) {
	te := newTokenEndpoint(t)
	k, _, now := keeperWith(t, te, 30*time.Second) // due (lead: 5 min), still valid
	ctx := context.Background()
	for range 50 {
		tok, err := k.token(ctx, "s1")
		if err != nil || tok != "old-access" {
			t.Fatalf("token while the refresh fails = %q, %v; want the valid old token", tok, err)
		}
	}
	if n := te.hits.Load(); n != 1 {
		t.Fatalf("%d refreshes for 50 uses within the backoff; want 1", n)
	}
	*now = now.Add(refreshBackoffMin + time.Millisecond)
	k.token(ctx, "s1")
	if n := te.hits.Load(); n != 2 {
		t.Fatalf("%d refreshes after the first backoff; want 2", n)
	}
	*now = now.Add(refreshBackoffMin + time.Millisecond) // less than the doubled backoff
	k.token(ctx, "s1")
	if n := te.hits.Load(); n != 2 {
		t.Errorf("%d refreshes before the doubled backoff ended; want still 2", n)
	}
	// Once expired, a request fails (not a sign-in: it may mend).
	*now = now.Add(time.Minute)
	te.set(http.StatusServiceUnavailable, `{}`)
	_, err := k.token(ctx, "s1")
	var de *discovery.Error
	if !errors.As(err, &de) || de.Class == discovery.ClassAuth || !strings.Contains(de.Message, "refresh") {
		t.Errorf("token once expired, the refresh failing = %v; want a retryable refresh error", err)
	}
}

// A refresh refused for good (invalid_grant: the grant was revoked) is
// kept on the grant: every later request fails at once, saying to sign
// in again, and the token endpoint hears no more.
func TestRefreshRevokedAsksToSignInAgain(t *testing.T) {
	te := newTokenEndpoint(t)
	te.set(http.StatusBadRequest, `{"error":"invalid_grant","error_description":"grant request is invalid"}`)
	k, db, _ := keeperWith(t, te, -time.Second)
	ctx := context.Background()
	for i := range 5 {
		_, err := k.token(ctx, "s1")
		var de *discovery.Error
		if !errors.As(err, &de) || de.Class != discovery.ClassAuth || !strings.Contains(de.Message, "sign in again") {
			t.Fatalf("token %d after invalid_grant = %v; want auth_required, sign in again", i, err)
		}
	}
	if n := te.hits.Load(); n != 1 {
		t.Errorf("%d refreshes; want 1, then none", n)
	}
	if g, _, _ := db.LatestGrant(ctx, "s1"); g.Problem == "" || !strings.Contains(g.Problem, "invalid_grant") {
		t.Errorf("grant problem = %q; want it kept, naming invalid_grant", g.Problem)
	}
}

// A token is refreshed ahead of its expiry, once; the new one is kept.
func TestRefreshAheadOfExpiry(t *testing.T) {
	ctx := t.Context()
	te := newTokenEndpoint(t)
	te.set(http.StatusOK, `{"access_token":"new-access","token_type":"Bearer","expires_in":3600,"refresh_token":"new-refresh"}`)
	k, db, _ := keeperWith(t, te, 2*time.Minute)
	for range 3 {
		if tok, err := k.token(context.Background(), "s1"); err != nil || tok != "new-access" {
			t.Fatalf("token = %q, %v; want the refreshed one", tok, err)
		}
	}
	if n := te.hits.Load(); n != 1 {
		t.Errorf("%d refreshes; want 1", n)
	}
	if g, _, _ := db.LatestGrant(ctx, "s1"); g.AccessToken != "new-access" || g.RefreshToken != "new-refresh" || time.Until(g.ExpiresAt) < 50*time.Minute {
		t.Errorf("kept grant = %q %q expiring in %s", g.AccessToken, g.RefreshToken, time.Until(g.ExpiresAt))
	}
	// Not due: no refresh.
	if at := time.Now(); refreshLead(store.Grant{SavedAt: at, ExpiresAt: at.Add(6 * time.Second)}) != 2*time.Second {
		t.Errorf("lead of a 6 s token = %s; want its last third, 2 s", refreshLead(store.Grant{SavedAt: at, ExpiresAt: at.Add(6 * time.Second)}))
	}
}

// Nothing refreshes the tokens of a disabled or deleted server.
func TestNoRefreshForDisabledOrDeletedServer(t *testing.T) {
	ctx := t.Context()
	te := newTokenEndpoint(t)
	te.set(http.StatusOK, `{"access_token":"new-access","token_type":"Bearer","expires_in":3600}`)
	k, db, _ := keeperWith(t, te, -time.Second)
	srv, _ := db.Server(ctx, "s1")
	srv.Enabled = false
	if err := db.UpdateServer(ctx, srv); err != nil {
		t.Fatal(err)
	}
	if _, err := k.token(context.Background(), "s1"); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("token of a disabled server = %v; want refused, disabled", err)
	}
	if err := db.DeleteServer(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	k.Forget("s1")
	for range 10 {
		if tok, err := k.token(context.Background(), "s1"); err != nil || tok != "" {
			t.Errorf("token of a deleted server = %q, %v; want none", tok, err)
		}
	}
	if n := te.hits.Load(); n != 0 {
		t.Errorf("%d refreshes for a disabled, then deleted server; want 0", n)
	}
}

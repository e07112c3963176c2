package session

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/store/bolt"
)

func TestMain(m *testing.M) {
	bolt.RunChildCheckIfAsked() // the store checks an existing file in a child: this binary
	os.Exit(m.Run())
}

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func openStore(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newSessions(t *testing.T) (*Sessions, *clock) {
	c := &clock{time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	return New(openStore(t, filepath.Join(t.TempDir(), "sb.db")), NewToken("token-0123456789", ""), "code", c.now), c
}

// login starts a session and returns the request a browser with its
// cookie makes next.
func login(t *testing.T, ss *Sessions) (*http.Request, *http.Cookie) {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0")
	if err := ss.Start(rec, r, ""); err != nil {
		t.Fatalf("Start = %v", err)
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Name != Cookie || len(cookies[0].Value) != 64 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("Start set cookies %+v; want one HttpOnly SameSite=Strict %s with a 32-byte secret", cookies, Cookie)
	}
	next := httptest.NewRequest(http.MethodGet, "/", nil)
	next.AddCookie(cookies[0])
	return next, cookies[0]
}

func TestLoginCodeWorksOnce(t *testing.T) {
	ss, _ := newSessions(t)
	if ss.RedeemCode("wrong") {
		t.Fatal("a wrong code was accepted")
	}
	if !ss.RedeemCode("code") {
		t.Fatal("the code was refused")
	}
	if ss.RedeemCode("code") {
		t.Fatal("the code worked twice")
	}
}

func TestToken(t *testing.T) {
	ss, _ := newSessions(t)
	for tok, want := range map[string]bool{"token-0123456789": true, "": false, "token-012345678": false, "token-0123456789x": false} {
		if got := ss.ValidToken(tok); got != want {
			t.Errorf("ValidToken(%q) = %v; want %v", tok, got, want)
		}
	}
	if NewToken("", "").Valid("") {
		t.Error("an empty token is valid where none is set")
	}
}

// A token kept in a file is replaced as soon as the file is: the old one
// is refused from then on. A file gone or emptied keeps the last token.
func TestTokenFileRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db.api-token")
	write := func(v string) {
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("old-token-0123456789\n")
	k := NewToken("old-token-0123456789", path)
	if !k.Valid("old-token-0123456789") {
		t.Fatal("Valid(old) before rotation = false; want true")
	}
	write("new-token-0123456789\n")
	if k.Valid("old-token-0123456789") || !k.Valid("new-token-0123456789") {
		t.Errorf("after rotation: Valid(old) = %v, Valid(new) = %v; want false, true", k.Valid("old-token-0123456789"), k.Valid("new-token-0123456789"))
	}
	write("\n")
	if !k.Valid("new-token-0123456789") {
		t.Error("an emptied file ended the token; want it kept")
	}
	os.Remove(path)
	if !k.Valid("new-token-0123456789") || k.Valid("") {
		t.Error("a removed file ended the token; want it kept")
	}
}

// A session outlives the Sessions that started it: another, on the same
// store (a restart), knows it, with the same CSRF token; it lasts TTL.
func TestSessionSurvivesRestartAndLastsTTL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sb.db")
	c := &clock{time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	db := openStore(t, path)
	ss := New(db, NewToken("token-0123456789", ""), "code", c.now)
	r, ck := login(t, ss)
	s, ok := ss.Of(r)
	if !ok || s.ID != ck.Value || len(s.CSRF) != 64 || s.CSRF == s.ID || !s.Expires.Equal(c.t.Add(TTL)) {
		t.Fatalf("Of(the new session) = %+v, %v; want it, with a CSRF token of its own, expiring after TTL", s, ok)
	}
	kept, err := db.Session(t.Context(), store.HashToken(ck.Value))
	if err != nil || kept.Agent != "Firefox" {
		t.Errorf("the store keeps %+v, %v; want the session's hash, agent Firefox", kept, err)
	}
	db.Close()

	ss = New(openStore(t, path), NewToken("token-0123456789", ""), "", c.now)
	c.t = c.t.Add(TTL - time.Second)
	if got, ok := ss.Of(r); !ok || got != s {
		t.Fatalf("Of after a restart, just before the TTL = %+v, %v; want %+v", got, ok, s)
	}
	c.t = c.t.Add(time.Second)
	if _, ok := ss.Of(r); ok {
		t.Fatal("the session outlived its TTL")
	}
}

func TestEndAndEndAll(t *testing.T) {
	ss, _ := newSessions(t)
	r1, _ := login(t, ss)
	r2, _ := login(t, ss)
	r3, _ := login(t, ss)
	rec := httptest.NewRecorder()
	if id := ss.End(rec, r1); id == "" {
		t.Error("End of a session = \"\"; want its id")
	}
	if c := rec.Result().Cookies(); len(c) != 1 || c[0].MaxAge >= 0 {
		t.Errorf("End set cookies %+v; want the session cookie cleared", c)
	}
	if _, ok := ss.Of(r1); ok {
		t.Error("an ended session is still valid")
	}
	if _, ok := ss.Of(r2); !ok {
		t.Fatal("End ended another session too")
	}
	rec = httptest.NewRecorder()
	if n, err := ss.EndAll(rec, r2); n != 2 || err != nil {
		t.Errorf("EndAll = %d, %v; want 2, nil", n, err)
	}
	for i, r := range []*http.Request{r2, r3} {
		if _, ok := ss.Of(r); ok {
			t.Errorf("session %d after EndAll is still valid", i+2)
		}
	}
	if id := ss.End(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/logout", nil)); id != "" {
		t.Errorf("End without a cookie = %q; want \"\"", id)
	}
}

func TestAgentFamily(t *testing.T) {
	for _, tc := range []struct{ name, ua, want string }{
		{"firefox", "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0", "Firefox"},
		{"chrome", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36", "Chrome"},
		{"headless chrome", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/141.0.0.0 Safari/537.36", "Chrome"},
		{"edge", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36 Edg/141.0.0.0", "Edge"},
		{"safari", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15", "Safari"},
		{"curl", "curl/8.14.1", "curl"},
		{"unknown", "something", ""},
		{"none", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AgentFamily(tc.ua); got != tc.want {
				t.Errorf("AgentFamily(%q) = %q; want %q", tc.ua, got, tc.want)
			}
		})
	}
}

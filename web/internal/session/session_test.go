package session

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestLoginCodeWorksOnce(t *testing.T) {
	ss := New("token-0123456789", "code")
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
	ss := New("token-0123456789", "code")
	for tok, want := range map[string]bool{"token-0123456789": true, "": false, "token-012345678": false, "token-0123456789x": false} {
		if got := ss.ValidToken(tok); got != want {
			t.Errorf("ValidToken(%q) = %v; want %v", tok, got, want)
		}
	}
	if New("", "code").ValidToken("") {
		t.Error("an empty token is valid where none is set")
	}
}

func TestSessionLastsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ss := New("token-0123456789", "code")
		id, s := ss.Create()
		if s.ID != id || len(s.CSRF) != 64 || s.CSRF == id {
			t.Fatalf("Create = %q, %+v; want its id and its own CSRF token", id, s)
		}
		time.Sleep(TTL)
		if got, ok := ss.Get(id); !ok || got != s {
			t.Fatalf("Get at the TTL = %+v, %v; want the session", got, ok)
		}
		time.Sleep(time.Second)
		if _, ok := ss.Get(id); ok {
			t.Fatal("the session outlived its TTL")
		}
	})
}

func TestDeleteEndsSession(t *testing.T) {
	ss := New("token-0123456789", "code")
	id, _ := ss.Create()
	ss.Delete(id)
	if _, ok := ss.Get(id); ok {
		t.Fatal("a deleted session is still valid")
	}
}

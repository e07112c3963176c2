package discovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/switchboard-dev/switchboard/discovery/oauth"
)

// TokenSource gives the OAuth access token for a remote server's requests.
type TokenSource interface {
	// Token returns the access token to send now ("" to send none). An
	// error ends the request; a *Error of class ClassAuth says the person
	// must sign in (again).
	Token(ctx context.Context) (string, error)
}

// maxRecordedTokens bounds how many tokens one verification, watch or
// session remembers for redaction: the most recent ones. A source hands
// out a new token when the old one expires (an hour, commonly), so a
// watch held for weeks stays within it; the tokens it forgets are long
// expired, and the errors it still reports come from requests that
// carried recent ones.
const maxRecordedTokens = 64

// tokenRecorder is the TokenSource of one verification, watch or
// session: it asks src, and remembers every token src handed out, so
// that they are redacted like header values (see Target.secrets). It is
// safe for concurrent use.
type tokenRecorder struct {
	src TokenSource

	mu     sync.Mutex
	tokens []string // distinct, the most recent last
}

// Token asks the source for the token to send, and remembers it. A
// *Error the source returns is copied (whoever reports it fills in its
// phase and redacts its message), with a zero challenge if it is of
// class ClassAuth and has none (see Error.Auth); another error is
// wrapped to say what failed.
func (r *tokenRecorder) Token(ctx context.Context) (string, error) {
	tok, err := r.src.Token(ctx)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			c := *e
			if c.Class == ClassAuth && c.Auth == nil {
				c.Auth = &oauth.Challenge{}
			}
			return "", &c
		}
		return "", fmt.Errorf("getting the access token to send: %w", err)
	}
	if tok != "" {
		r.mu.Lock()
		if i := slices.Index(r.tokens, tok); i >= 0 {
			r.tokens = slices.Delete(r.tokens, i, i+1)
		}
		r.tokens = append(r.tokens, tok)
		if n := len(r.tokens) - maxRecordedTokens; n > 0 {
			r.tokens = slices.Delete(r.tokens, 0, n)
		}
		r.mu.Unlock()
	}
	return tok, nil
}

// handedOut returns the tokens the source handed out so far.
func (r *tokenRecorder) handedOut() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.tokens)
}

// signInRequired returns err's *Error if it says the person must sign in
// (class ClassAuth), else nil.
func signInRequired(err error) *Error {
	var e *Error
	if errors.As(err, &e) && e.Class == ClassAuth {
		return e
	}
	return nil
}

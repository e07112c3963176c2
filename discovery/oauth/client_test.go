package oauth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// Every request of a sign-in goes through the HTTP of the Client, asked
// with the server's URL (the resource, once there is a grant); a
// failure of it fails the operation as an *Error of the step discovery,
// before any request is made.
func TestClientHTTP(t *testing.T) {
	var asked []string
	c := &Client{HTTP: func(_ context.Context, serverURL string) (*http.Client, error) {
		asked = append(asked, serverURL)
		return nil, errors.New("refused by the test")
	}}
	ctx := context.Background()
	g := &Grant{Resource: "https://b.example/mcp", TokenEndpoint: "https://as.example/token", Revocation: "https://as.example/revoke", RefreshToken: "r"}
	p := &Pending{Plan: Plan{Resource: "https://c.example/mcp"}, URL: "https://as.example/auth", RedirectURI: "http://127.0.0.1:9/cb"}
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"Discover", func() error { _, err := c.Discover(ctx, "https://a.example/mcp", Challenge{}, Scopes{}); return err }, "https://a.example/mcp"},
		{"Refresh", func() error { return c.Refresh(ctx, g) }, g.Resource},
		{"Revoke", func() error { _, err := c.Revoke(ctx, g); return err }, g.Resource},
		{"AuthorizeNonInteractive", func() error { _, err := c.AuthorizeNonInteractive(ctx, p); return err }, p.Plan.Resource},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			err := tc.call()
			var e *Error
			if !errors.As(err, &e) || e.Step != "discovery" || e.Message != "refused by the test" {
				t.Errorf("%s = %v; want an *Error of the step discovery saying the HTTP's refusal", tc.name, err)
			}
			if len(asked) != 1 || asked[0] != tc.want {
				t.Errorf("%s asked HTTP for %q; want once, for %q", tc.name, asked, tc.want)
			}
		})
	}
}

// The zero Client holds its requests to the outgoing-request policy: it
// never connects to a cloud metadata address.
func TestZeroClientPolicy(t *testing.T) {
	_, err := (&Client{}).Discover(context.Background(), "http://169.254.169.254/mcp", Challenge{}, Scopes{})
	var e *Error
	if !errors.As(err, &e) || e.Step != "discovery" || !strings.Contains(e.Message, "never connects to") {
		t.Fatalf("Discover(the metadata address) = %v; want an *Error of the step discovery: the policy's refusal", err)
	}
}

// AuthorizeNonInteractive follows redirects to the redirect URI with the
// HTTP's client left as it was, and with net/http's default limit where
// that client judges no redirect.
func TestAuthorizeNonInteractiveLeavesHTTPClient(t *testing.T) {
	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusFound, Header: http.Header{"Location": {"http://127.0.0.1:9/cb?code=x&state=s"}},
			Body: http.NoBody, Request: r}, nil
	})}
	c := &Client{HTTP: func(context.Context, string) (*http.Client, error) { return hc, nil }}
	answer, err := c.AuthorizeNonInteractive(context.Background(), &Pending{URL: "https://as.example/auth", RedirectURI: "http://127.0.0.1:9/cb"})
	if err != nil || answer.Get("code") != "x" {
		t.Fatalf("AuthorizeNonInteractive = %v, %v; want the redirect's code", answer, err)
	}
	if hc.CheckRedirect != nil {
		t.Error("AuthorizeNonInteractive set the CheckRedirect of the client HTTP gave")
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

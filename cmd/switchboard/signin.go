package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/discovery/oauth"
)

// The CLI signs in to a remote server that answers 401 as the dashboard
// does (discovery.SignIn), holding the tokens for the one command: the
// person is sent to the authorization server in a browser (or given the
// URL), which sends them back to a listener on 127.0.0.1 (RFC 8252). The
// access token goes to the server through the target's TokenSource.

// signInWait bounds how long the CLI waits for the person to sign in.
const signInWait = 5 * time.Minute

// maxSignIns bounds the sign-ins of one command: the first, and a
// step-up or two, so that a server that never accepts a token cannot
// hold the command in a loop.
const maxSignIns = 3

// oauthFlags are the sign-in flags of verify and call.
type oauthFlags struct {
	nonInteractive *bool
	noBrowser      *bool
	clientID       *string
	clientSecret   *string
	metadataURL    *string
	scopes         *string
}

func addOAuthFlags(fs *flag.FlagSet) *oauthFlags {
	return &oauthFlags{
		nonInteractive: fs.Bool("oauth-non-interactive", false, "sign in without a browser: GET the authorization URL and follow its redirect (only for authorization servers that approve at once)"),
		noBrowser:      fs.Bool("no-browser", false, "print the sign-in URL instead of opening a browser"),
		clientID:       fs.String("oauth-client-id", "", "a client registered with the authorization server, for one that offers neither client metadata documents nor dynamic registration"),
		clientSecret:   fs.String("oauth-client-secret", "", "that client's secret, if it has one"),
		metadataURL:    fs.String("oauth-client-metadata-url", "", "Switchboard's Client ID Metadata Document URL, used as client_id where the authorization server supports those"),
		scopes:         fs.String("oauth-scopes", "", `the scopes to sign in with, space-separated ("a b"), in place of those the server asks for (else all it supports)`),
	}
}

// grantToken is the TokenSource of a command's requests: the access
// token of its last sign-in, none before one.
type grantToken struct {
	mu    sync.Mutex
	grant *oauth.Grant
}

// Token returns the access token of the last sign-in, or "".
func (s *grantToken) Token(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grant == nil {
		return "", nil
	}
	return s.grant.AccessToken, nil
}

// set makes g the grant whose access token is sent.
func (s *grantToken) set(g *oauth.Grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grant = g
}

// signingIn runs attempt, and when it ends asking for a sign-in (an
// *discovery.Error of class auth_required), signs in to t's server, has
// t send the access token (t.Token) and runs attempt again.
func (of *oauthFlags) signingIn(ctx context.Context, v *discovery.Verifier, t *discovery.Target, stderr io.Writer, attempt func() error) error {
	var grant *oauth.Grant
	t.OAuthScopes = strings.Fields(*of.scopes)
	token := &grantToken{}
	if t.Transport != discovery.TransportStdio {
		t.Token = token
	}
	for signIns := 0; ; signIns++ {
		err := attempt()
		var e *discovery.Error
		if !errors.As(err, &e) || e.Class != discovery.ClassAuth || t.Transport == discovery.TransportStdio || signIns >= maxSignIns {
			return err
		}
		client := oauth.ClientInfo{ClientID: *of.clientID, ClientSecret: *of.clientSecret, MetadataURL: *of.metadataURL, Name: "Switchboard CLI",
			Scopes: t.OAuthScopes}
		var authorize func(context.Context, *oauth.Pending) (url.Values, error)
		var stop func()
		if *of.nonInteractive {
			// Any loopback URI: nothing listens, the answer is read from
			// the redirect itself.
			client.RedirectURI = "http://127.0.0.1:9/callback"
			authorize = v.AuthorizeNonInteractive
		} else {
			var err error
			if client.RedirectURI, authorize, stop, err = browserSignIn(stderr, !*of.noBrowser); err != nil {
				return err
			}
		}
		fmt.Fprintf(stderr, "switchboard: %s asks to sign in\n", t.URL)
		g, err := v.SignIn(ctx, t.URL, *e.Auth, client, grant, authorize)
		if stop != nil {
			stop()
		}
		if err != nil {
			return err
		}
		grant = g
		token.set(g)
		fmt.Fprintf(stderr, "switchboard: signed in at %s\n", g.Issuer)
	}
}

// browserSignIn listens on 127.0.0.1 for the authorization server's
// redirect and returns its URI and an authorize for discovery.SignIn
// that sends the person to the sign-in URL (opening a browser if
// withBrowser) and waits for them to come back; stop closes the
// listener.
func browserSignIn(stderr io.Writer, withBrowser bool) (redirect string, authorize func(context.Context, *oauth.Pending) (url.Values, error), stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, fmt.Errorf("sign in: listen for the callback: %w", err)
	}
	redirect = fmt.Sprintf("http://%s/callback", ln.Addr())
	answers := make(chan url.Values, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case answers <- r.URL.Query():
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<!doctype html><title>Switchboard</title><p>%s</p>", html.EscapeString("Back in Switchboard: you can close this tab."))
		default:
			http.Error(w, "this sign-in was already answered", http.StatusConflict)
		}
	})}
	go srv.Serve(ln)
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
	authorize = func(ctx context.Context, p *oauth.Pending) (url.Values, error) {
		fmt.Fprintf(stderr, "switchboard: sign in at:\n  %s\n", p.URL)
		if withBrowser {
			if err := openBrowser(p.URL); err != nil {
				fmt.Fprintf(stderr, "switchboard: could not open a browser (%v): open the URL above\n", err)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, signInWait)
		defer cancel()
		select {
		case a := <-answers:
			return a, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("sign in: no answer within %s", signInWait)
		}
	}
	return redirect, authorize, stop, nil
}

// openBrowser opens u in the person's browser.
func openBrowser(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		cmd = exec.Command("xdg-open", u)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

// Package oauth is the OAuth client of sign-ins to remote MCP servers
// (OAuth 2.1, as the MCP 2025-11-25 and 2026-07-28 revisions describe
// it): the discovery of where to sign in, the client, the authorization
// with PKCE, the code exchange, refreshes and revocation, each request
// under the outgoing-request policy of the server's URL
// (discovery/netpolicy), and the redaction of what an authorization
// server echoes of them.
//
// The flow, for a remote server that answers 401:
//
//  1. The 401's WWW-Authenticate names the protected resource metadata
//     (RFC 9728), else it is looked for at the well-known paths; its
//     resource must be the server's URL.
//  2. Its first authorization server's metadata (RFC 8414, then OpenID
//     discovery) must name the issuer it was asked for.
//  3. The client is a Client ID Metadata Document URL where the server
//     supports those, else a pre-registered client, else one registered
//     dynamically (RFC 7591).
//  4. The person is sent to the authorization endpoint: code flow with
//     PKCE S256, state, resource (RFC 8707) and the scopes the person
//     chose, else those the 401 named, else all the resource supports
//     (see Scopes); the answer's iss (RFC 9207) must be the issuer.
//  5. The code is exchanged (resource again); the tokens are the
//     caller's to keep, as secrets, keyed by issuer, and refreshed ahead
//     of expiry (an Error says whether a refusal needs a new sign-in:
//     SignInAgain). A discovery.Target's TokenSource hands the access
//     token to each request to the server.
//
// Every request goes through the outgoing-request policy of the server's
// URL: the authorization server is "another host", so it must be of the
// server's network class or wider, and no link-local or metadata
// address, whatever a metadata document says.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/discovery/netpolicy"
)

// Client runs sign-ins. The zero Client sends every request under the
// outgoing-request policy of the server's URL as netpolicy makes it.
type Client struct {
	// HTTP, if set, returns the HTTP client of the requests of a sign-in
	// to the server at serverURL (metadata, registration, token,
	// revocation, authorization), which must hold them to the
	// outgoing-request policy of serverURL; its CheckRedirect, if set,
	// judges every redirect. An error it returns fails the operation as
	// an *Error of the step discovery.
	HTTP func(ctx context.Context, serverURL string) (*http.Client, error)
}

// httpClient returns the HTTP client of a sign-in's requests to the
// server at serverURL (see Client.HTTP); a failure is an *Error.
func (c *Client) httpClient(ctx context.Context, serverURL string) (*http.Client, error) {
	get := c.HTTP
	if get == nil {
		get = policyHTTP
	}
	hc, err := get(ctx, serverURL)
	if err != nil {
		if _, ok := err.(*Error); ok {
			return nil, err
		}
		return nil, errorf("discovery", "%v", err)
	}
	return hc, nil
}

// policyHTTP is the HTTP of the zero Client: every request under the
// outgoing-request policy of the server's URL, with the server's network
// class taken from what its name resolves to now.
func policyHTTP(ctx context.Context, serverURL string) (*http.Client, error) {
	policy, err := netpolicy.New(serverURL, nil)
	if err != nil {
		return nil, fmt.Errorf("invalid server URL: %v", err)
	}
	if err := policy.ResolveOrigin(ctx); err != nil {
		return nil, fmt.Errorf("cannot resolve the server's host: %v", err)
	}
	return policy.Client(), nil
}

// maxBodyBytes bounds a metadata or token response.
const maxBodyBytes = 256 << 10

// Challenge is what a 401 or 403 said in its WWW-Authenticate header
// about the Bearer scheme.
type Challenge struct {
	Status           int    // 401 or 403
	ResourceMetadata string // resource_metadata: the protected resource metadata URL
	Scope            string // scope: the scopes the resource asks for
	Error            string // error: e.g. insufficient_scope
}

// ParseChallenge reads the Bearer challenge of WWW-Authenticate values;
// ok is false when there is none (a 401 of another scheme is about
// credentials Switchboard cannot get by signing in).
func ParseChallenge(status int, values []string) (c Challenge, ok bool) {
	c.Status = status
	for _, v := range values {
		scheme, params, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			continue
		}
		ok = true
		for name, value := range authParams(params) {
			switch name {
			case "resource_metadata":
				c.ResourceMetadata = value
			case "scope":
				c.Scope = value
			case "error":
				c.Error = value
			}
		}
		break
	}
	return c, ok
}

// authParams parses auth-params: name=token or name="quoted string",
// separated by commas.
func authParams(s string) map[string]string {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		name, rest, ok := strings.Cut(s, "=")
		if !ok {
			break
		}
		name = strings.ToLower(strings.TrimSpace(strings.TrimLeft(name, ", ")))
		rest = strings.TrimSpace(rest)
		var value string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			value, rest = b.String(), rest[min(i+1, len(rest)):]
		} else {
			value, rest, _ = strings.Cut(rest, ",")
			value = strings.TrimSpace(value)
		}
		out[name] = value
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), ","))
	}
	return out
}

// ServerMetadata is an authorization server's metadata (RFC 8414), as
// far as the flow uses it.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint,omitempty"`
	RevocationEndpoint                string   `json:"revocation_endpoint,omitempty"`
	ScopesSupported                   []string `json:"scopes_supported,omitempty"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported,omitempty"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported,omitempty"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
}

// Plan is what the discovery of a server's authorization found.
type Plan struct {
	// Resource is the protected resource (the server's URL as its
	// metadata names it), sent as resource in every request.
	Resource string
	// Server is its authorization server.
	Server ServerMetadata
	// Scopes are those to ask for (see Client.Discover for the rule);
	// none leaves the scope parameter out.
	Scopes []string
}

// Scopes says which scopes a sign-in asks for besides the challenge's.
type Scopes struct {
	Configured []string // chosen by the person: replace the default choice (scopes_supported)
	Granted    []string // of an earlier sign-in: asked for again (a step-up must not lose them)
}

// ClientInfo says who Switchboard is to an authorization server.
type ClientInfo struct {
	// RedirectURI is where the authorization server sends the browser
	// back (the dashboard's callback, or the CLI's loopback listener).
	RedirectURI string
	// MetadataURL is Switchboard's Client ID Metadata Document, used as
	// client_id where the server supports those (empty: not offered).
	MetadataURL string
	// ClientID and ClientSecret are a client pre-registered with the
	// server (ClientSecret empty for a public client).
	ClientID     string
	ClientSecret string
	// AuthMethod is how that client authenticates at the token endpoint
	// (none, client_secret_basic or client_secret_post), if known: a
	// client registered dynamically at an earlier sign-in, used again.
	// Empty: chosen from the server's metadata.
	AuthMethod string
	// Name is the client_name of a dynamic registration.
	Name string
	// Scopes are the scopes configured for the server, which SignIn asks
	// for in place of the default choice (see Scopes.Configured);
	// none leaves the choice to the challenge and the resource.
	Scopes []string
}

// Grant is the outcome of a sign-in: the client the server knows, and
// its tokens. AccessToken, RefreshToken and ClientSecret are secrets.
type Grant struct {
	Issuer        string    `json:"issuer"`
	TokenEndpoint string    `json:"token_endpoint"`
	Revocation    string    `json:"revocation_endpoint,omitempty"`
	Resource      string    `json:"resource"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"`
	AuthMethod    string    `json:"token_endpoint_auth_method"` // none, client_secret_basic or client_secret_post
	Scope         string    `json:"scope,omitempty"`
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	ExpiresAt     time.Time `json:"expires_at,omitzero"` // zero: the server gave no lifetime
}

// Pending is a sign-in under way: what the callback is checked against
// and the code exchanged with. It stays on the server side.
type Pending struct {
	Plan         Plan
	State        string
	CodeVerifier string
	RedirectURI  string
	ClientID     string
	ClientSecret string
	AuthMethod   string
	// URL is where to send the person.
	URL string
}

// Error is a refusal of the authorization flow, with what to do.
type Error struct {
	Step    string // discovery, registration, authorization, token, refresh
	Message string
	// Code is the OAuth error the authorization server answered (its
	// error field, e.g. invalid_grant); "" if it gave none.
	Code string
	// Status is the HTTP status of the authorization server's answer; 0
	// when there was no answer (a network error, say).
	Status int

	// mustSignIn marks a refusal without an answer that only a new
	// sign-in ends (no refresh token is held).
	mustSignIn bool
}

func (e *Error) Error() string { return "sign-in (" + e.Step + "): " + e.Message }

// SignInAgain reports whether the refusal means the grant cannot be used
// again and the person must sign in: the authorization server answered
// invalid_grant, invalid_client, unauthorized_client or invalid_scope, or
// a 400/401 without a code. A network error, a 5xx or 429 is not (retry
// later).
//
// A refresh of a grant that holds no refresh token is one too: there is
// nothing to retry with.
func (e *Error) SignInAgain() bool {
	switch e.Code {
	case "invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope":
		return true
	case "":
		return e.mustSignIn || e.Status == http.StatusBadRequest || e.Status == http.StatusUnauthorized
	}
	return false
}

func errorf(step, format string, args ...any) error {
	return &Error{Step: step, Message: fmt.Sprintf(format, args...)}
}

// answerErr is the *Error of a request to the authorization server
// that failed with err (from doJSON): what failed, the status and OAuth
// error of the answer if there was one, and what to do.
func answerErr(step, what string, err error) *Error {
	e := &Error{Step: step, Message: fmt.Sprintf("%s: %v", what, err)}
	var ae *answerError
	if errors.As(err, &ae) {
		e.Status, e.Code = ae.Status, ae.Code
	}
	switch {
	case e.SignInAgain() && (step == "token" || step == "refresh"):
		e.Message += ": sign in again"
	case e.Status == 0, e.Status == http.StatusTooManyRequests, e.Status >= 500:
		e.Message += ": try again later"
	}
	return e
}

// Discover finds how to sign in to the server at serverURL, from the
// challenge of its 401 (or 403 insufficient_scope; a zero challenge
// looks at the well-known locations only). The scopes asked for are
// scopes.Configured if any, else the challenge's scope, else all the
// resource supports (scopes_supported); then, for a step-up (a challenge
// with error insufficient_scope), the challenge's scope is added, then
// scopes.Granted (what an earlier sign-in had, which the other
// operations still need); last offline_access, when other scopes are
// asked for and the authorization server supports it. A failure is an
// *Error.
func (c *Client) Discover(ctx context.Context, serverURL string, challenge Challenge, scopes Scopes) (*Plan, error) {
	hc, err := c.httpClient(ctx, serverURL)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, errorf("discovery", "invalid server URL: %v", err)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	candidates := []string{}
	if challenge.ResourceMetadata != "" {
		candidates = append(candidates, challenge.ResourceMetadata)
	}
	origin := u.Scheme + "://" + u.Host
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		candidates = append(candidates, origin+"/.well-known/oauth-protected-resource"+p)
	}
	candidates = append(candidates, origin+"/.well-known/oauth-protected-resource")
	var tried []string
	for _, m := range candidates {
		if err = getJSON(ctx, hc, m, &prm); err == nil {
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %v", m, err))
	}
	if err != nil {
		return nil, errorf("discovery", "no protected resource metadata (RFC 9728) found: %s", strings.Join(tried, "; "))
	}
	if !sameResource(prm.Resource, serverURL) {
		return nil, errorf("discovery", "the protected resource metadata names the resource %q, not this server's URL %q: refused", prm.Resource, serverURL)
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, errorf("discovery", "the protected resource metadata names no authorization server")
	}
	as, err := authServerMetadata(ctx, hc, prm.AuthorizationServers[0])
	if err != nil {
		return nil, err
	}
	plan := &Plan{Resource: prm.Resource, Server: *as, Scopes: scopesFor(challenge, scopes, prm.ScopesSupported)}
	// A refresh token is what lets Switchboard keep a server verified
	// without the person: ask for it where the server says how. Not when
	// no scope is asked for: the scope parameter is then left out, and
	// the server grants what it grants by default (offline_access alone
	// would ask for nothing but a refresh token).
	if len(plan.Scopes) > 0 && slices.Contains(as.ScopesSupported, "offline_access") && !slices.Contains(plan.Scopes, "offline_access") {
		plan.Scopes = append(plan.Scopes, "offline_access")
	}
	return plan, nil
}

// scopesFor is the scopes a sign-in asks for before offline_access (see
// Discover): scopes.Configured, else the challenge's, else supported
// (the resource's scopes_supported); then the challenge's for a step-up,
// then scopes.Granted; each once, in that order.
func scopesFor(challenge Challenge, scopes Scopes, supported []string) []string {
	var out []string
	add := func(list []string) {
		for _, sc := range list {
			if sc != "" && !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	asked := strings.Fields(challenge.Scope)
	switch {
	case len(scopes.Configured) > 0:
		add(scopes.Configured)
	case len(asked) > 0:
		add(asked)
	default:
		add(supported)
	}
	if challenge.Error == "insufficient_scope" {
		add(asked)
	}
	add(scopes.Granted)
	return out
}

// sameResource reports whether the resource a metadata document names
// covers the server's URL: the same origin, and a path that is the
// server's or one of its parents (a resource may be the whole origin),
// whole segments only.
func sameResource(resource, serverURL string) bool {
	r, err1 := url.Parse(resource)
	u, err2 := url.Parse(serverURL)
	if err1 != nil || err2 != nil || r.Host == "" || r.RawQuery != "" || r.Fragment != "" || netpolicy.OriginOf(r) != netpolicy.OriginOf(u) {
		return false
	}
	rp, up := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(u.EscapedPath(), "/")
	return rp == up || strings.HasPrefix(up, rp+"/")
}

// authServerMetadata fetches the metadata of issuer: RFC 8414's
// well-known URL (the path after it), then OpenID discovery's (inserted
// and appended). Its issuer must be issuer exactly.
func authServerMetadata(ctx context.Context, hc *http.Client, issuer string) (*ServerMetadata, error) {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errorf("discovery", "the authorization server %q is not an http(s) URL", issuer)
	}
	origin, p := u.Scheme+"://"+u.Host, strings.TrimSuffix(u.EscapedPath(), "/")
	urls := []string{origin + "/.well-known/oauth-authorization-server" + p, origin + "/.well-known/openid-configuration" + p}
	if p != "" {
		urls = append(urls, origin+p+"/.well-known/openid-configuration")
	}
	var tried []string
	for _, m := range urls {
		var as ServerMetadata
		if err := getJSON(ctx, hc, m, &as); err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", m, err))
			continue
		}
		if as.Issuer != issuer {
			return nil, errorf("discovery", "the authorization server metadata at %s names the issuer %q, not %q: refused (RFC 8414)", m, as.Issuer, issuer)
		}
		if as.AuthorizationEndpoint == "" || as.TokenEndpoint == "" {
			return nil, errorf("discovery", "the authorization server metadata at %s has no authorization or token endpoint", m)
		}
		if len(as.CodeChallengeMethodsSupported) > 0 && !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
			return nil, errorf("discovery", "the authorization server %s does not support PKCE S256", issuer)
		}
		return &as, nil
	}
	return nil, errorf("discovery", "no authorization server metadata for %s: %s", issuer, strings.Join(tried, "; "))
}

// Start prepares a sign-in with plan as info says: it registers a
// client dynamically where it must, and returns the pending sign-in with
// the URL to send the person to.
func (c *Client) Start(ctx context.Context, plan *Plan, info ClientInfo) (*Pending, error) {
	p := &Pending{Plan: *plan, RedirectURI: info.RedirectURI, State: randomToken(), CodeVerifier: randomToken() + randomToken()}
	as := plan.Server
	switch {
	case as.ClientIDMetadataDocumentSupported && info.MetadataURL != "":
		p.ClientID, p.AuthMethod = info.MetadataURL, "none"
	case info.ClientID != "":
		p.ClientID, p.ClientSecret = info.ClientID, info.ClientSecret
		p.AuthMethod = "none"
		if info.ClientSecret != "" {
			p.AuthMethod = "client_secret_post"
			if slices.Contains(as.TokenEndpointAuthMethodsSupported, "client_secret_basic") || len(as.TokenEndpointAuthMethodsSupported) == 0 {
				p.AuthMethod = "client_secret_basic" // RFC 8414's default
			}
		}
		if info.AuthMethod != "" {
			p.AuthMethod = info.AuthMethod
		}
	case as.RegistrationEndpoint != "":
		if err := c.register(ctx, plan, info, p); err != nil {
			return nil, err
		}
	default:
		return nil, errorf("registration", "the authorization server %s offers neither client metadata documents nor dynamic registration: enter a client registered with it (client id, and secret if it gave one)", as.Issuer)
	}
	q := url.Values{}
	q.Set("response_type", "code")
	q.Set("client_id", p.ClientID)
	q.Set("redirect_uri", p.RedirectURI)
	q.Set("state", p.State)
	sum := sha256.Sum256([]byte(p.CodeVerifier))
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	q.Set("resource", plan.Resource)
	if len(plan.Scopes) > 0 {
		q.Set("scope", strings.Join(plan.Scopes, " "))
	}
	sep := "?"
	if strings.Contains(as.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	p.URL = as.AuthorizationEndpoint + sep + q.Encode()
	return p, nil
}

// register registers a client dynamically (RFC 7591).
func (c *Client) register(ctx context.Context, plan *Plan, info ClientInfo, p *Pending) error {
	method := "none"
	if ms := plan.Server.TokenEndpointAuthMethodsSupported; len(ms) > 0 && !slices.Contains(ms, "none") {
		method = ms[0]
	}
	name := info.Name
	if name == "" {
		name = "Switchboard"
	}
	body, _ := json.Marshal(map[string]any{
		"client_name": name, "redirect_uris": []string{info.RedirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": method, "application_type": applicationType(info.RedirectURI),
	})
	hc, err := c.httpClient(ctx, plan.Resource)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, plan.Server.RegistrationEndpoint, strings.NewReader(string(body)))
	if err != nil {
		return errorf("registration", "invalid registration endpoint: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	var reg struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if err := doJSON(hc, req, &reg); err != nil {
		return answerErr("registration", "dynamic registration at "+plan.Server.RegistrationEndpoint+" failed", err)
	}
	if reg.ClientID == "" {
		return errorf("registration", "dynamic registration at %s answered no client_id", plan.Server.RegistrationEndpoint)
	}
	p.ClientID, p.ClientSecret, p.AuthMethod = reg.ClientID, reg.ClientSecret, reg.AuthMethod
	if p.AuthMethod == "" {
		p.AuthMethod = method
	}
	return nil
}

// applicationType is the application_type of a dynamic registration
// (OpenID Connect Registration, as MCP asks): native for a client whose
// redirect goes to this machine (the CLI's listener, a dashboard on
// loopback), web otherwise.
func applicationType(redirectURI string) string {
	if u, err := url.Parse(redirectURI); err == nil {
		switch h := u.Hostname(); {
		case h == "localhost", strings.HasSuffix(h, ".localhost"):
			return "native"
		default:
			if ip, err := netip.ParseAddr(h); err == nil && ip.IsLoopback() {
				return "native"
			}
		}
	}
	return "web"
}

// Finish checks the authorization server's answer (the query of the
// redirect to the callback) against p, and exchanges its code for
// tokens.
func (c *Client) Finish(ctx context.Context, p *Pending, answer url.Values) (*Grant, error) {
	if subtle.ConstantTimeCompare([]byte(answer.Get("state")), []byte(p.State)) != 1 {
		return nil, errorf("authorization", "the answer's state does not match the sign-in's: refused")
	}
	// RFC 9207: where the server says it sends iss, it must; where it
	// sends one, it must be the issuer, compared as strings.
	iss, hasIss := answer["iss"]
	switch {
	case hasIss && (len(iss) != 1 || iss[0] != p.Plan.Server.Issuer):
		return nil, errorf("authorization", "the answer comes from the issuer %q, not %q: refused (RFC 9207)", answer.Get("iss"), p.Plan.Server.Issuer)
	case !hasIss && p.Plan.Server.IssParameterSupported:
		return nil, errorf("authorization", "the authorization server %s says it names itself in its answers (iss), and this one does not: refused (RFC 9207)", p.Plan.Server.Issuer)
	}
	if e := answer.Get("error"); e != "" {
		return nil, errorf("authorization", "the authorization server refused: %s %s", e, answer.Get("error_description"))
	}
	code := answer.Get("code")
	if code == "" {
		return nil, errorf("authorization", "the answer holds no code")
	}
	g := &Grant{Issuer: p.Plan.Server.Issuer, TokenEndpoint: p.Plan.Server.TokenEndpoint, Revocation: p.Plan.Server.RevocationEndpoint,
		Resource: p.Plan.Resource, ClientID: p.ClientID, ClientSecret: p.ClientSecret, AuthMethod: p.AuthMethod}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {p.RedirectURI},
		"code_verifier": {p.CodeVerifier}, "resource": {p.Plan.Resource}}
	if err := c.token(ctx, g, form, "token"); err != nil {
		return nil, err
	}
	return g, nil
}

// Refresh gets g new tokens with its refresh token, in place.
func (c *Client) Refresh(ctx context.Context, g *Grant) error {
	if g.RefreshToken == "" {
		return &Error{Step: "refresh", Message: "no refresh token is held: sign in again", mustSignIn: true}
	}
	return c.token(ctx, g, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.RefreshToken}, "resource": {g.Resource}}, "refresh")
}

// token posts form to g's token endpoint, authenticated as g's client,
// and keeps the tokens answered in g. Its error holds none of the
// request's secrets, nor g's (see redacted): a token endpoint that
// echoes its request in its refusal would otherwise put the refresh
// token and the client secret in every message, log line and record the
// error reaches.
func (c *Client) token(ctx context.Context, g *Grant, form url.Values, step string) (err error) {
	secrets := requestSecrets(g, form)
	defer func() { err = redacted(err, secrets) }()
	hc, err := c.httpClient(ctx, g.Resource)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	req, hc, err := clientRequest(ctx, hc, g, g.TokenEndpoint, form)
	if err != nil {
		return errorf(step, "invalid token endpoint: %v", err)
	}
	req.Header.Set("Accept", "application/json")
	var tok struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
	}
	if err := doJSON(hc, req, &tok); err != nil {
		what := "the token endpoint " + g.TokenEndpoint + " refused"
		if !errors.As(err, new(*answerError)) {
			what = "the token endpoint " + g.TokenEndpoint + " did not answer"
		}
		return answerErr(step, what, err)
	}
	if tok.AccessToken == "" || (tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "Bearer")) {
		return errorf(step, "the token endpoint answered no Bearer access token")
	}
	g.AccessToken = tok.AccessToken
	if tok.RefreshToken != "" {
		g.RefreshToken = tok.RefreshToken
	}
	if tok.Scope != "" {
		g.Scope = tok.Scope
	}
	g.ExpiresAt = time.Time{}
	if tok.ExpiresIn > 0 {
		g.ExpiresAt = time.Now().Add(time.Duration(min(tok.ExpiresIn, 10*365*86400)) * time.Second)
	}
	return nil
}

// clientRequest is a POST of form to endpoint (the token or the
// revocation endpoint) authenticated as g's client, and the client to
// send it with: the id in the form (none), the id and secret in the form
// (client_secret_post) or in an Authorization header that goes to the
// endpoint only and follows no redirect (client_secret_basic; the policy
// strips credentials from requests to other origins).
func clientRequest(ctx context.Context, hc *http.Client, g *Grant, endpoint string, form url.Values) (*http.Request, *http.Client, error) {
	switch g.AuthMethod {
	case "client_secret_post":
		form.Set("client_id", g.ClientID)
		form.Set("client_secret", g.ClientSecret)
	case "client_secret_basic":
	default:
		form.Set("client_id", g.ClientID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if g.AuthMethod == "client_secret_basic" {
		// RFC 6749 2.3.1: the id and secret form-encoded first.
		basic := &http.Request{Header: http.Header{}}
		basic.SetBasicAuth(url.QueryEscape(g.ClientID), url.QueryEscape(g.ClientSecret))
		hc = netpolicy.WithCredentials(hc, netpolicy.OriginOf(req.URL), basic.Header)
	}
	return req, hc, nil
}

// getJSON GETs u into v: 200 and a JSON body within maxBodyBytes.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	return doJSON(hc, req, v)
}

// answerError is an answer of an authorization server (or of a
// metadata URL) that doJSON refuses: another status than 2xx, with the
// OAuth error its body gives if any, or a body that is not the JSON asked
// for or is over maxBodyBytes (Problem says which).
type answerError struct {
	Status      int
	Code        string // the body's error, if any
	Description string // the body's error_description, if any
	Problem     string // why the body is refused, if it is
}

func (e *answerError) Error() string {
	switch {
	case e.Problem != "":
		return e.Problem
	case e.Code != "":
		return strings.TrimSpace(fmt.Sprintf("HTTP %d: %s %s", e.Status, e.Code, e.Description))
	}
	return fmt.Sprintf("HTTP %d", e.Status)
}

// doJSON sends req and decodes a 2xx JSON answer into v. An answer it
// refuses is an *answerError; no answer (a network error, a body cut
// off) is another error.
func doJSON(hc *http.Client, req *http.Request, v any) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes+1))
	if err != nil {
		return err
	}
	if len(body) > maxBodyBytes {
		return &answerError{Status: resp.StatusCode, Problem: fmt.Sprintf("answer over %d KiB", maxBodyBytes>>10)}
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &e) // a body that is not an OAuth error leaves them empty
		return &answerError{Status: resp.StatusCode, Code: e.Error, Description: e.Description}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return &answerError{Status: resp.StatusCode, Problem: fmt.Sprintf("answered %q, not JSON", mt)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return &answerError{Status: resp.StatusCode, Problem: fmt.Sprintf("not valid JSON: %v", err)}
	}
	return nil
}

// randomToken is 32 random bytes, base64url: state and PKCE verifiers.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// SignIn runs the whole flow for the server at serverURL, which
// answered challenge: discovery, the client, the authorization (by
// authorize, which sends the person to p.URL and returns the query of
// the redirect to p.RedirectURI) and the code exchange.
//
// The scopes asked for are info.Scopes, if any, in place of the
// default choice (see Discover). prev, if not nil, is the grant the
// server refused (a step-up): its scopes are asked for again.
func (c *Client) SignIn(ctx context.Context, serverURL string, challenge Challenge, info ClientInfo, prev *Grant,
	authorize func(context.Context, *Pending) (url.Values, error)) (*Grant, error) {
	scopes := Scopes{Configured: info.Scopes}
	if prev != nil {
		scopes.Granted = strings.Fields(prev.Scope)
	}
	plan, err := c.Discover(ctx, serverURL, challenge, scopes)
	if err != nil {
		return nil, err
	}
	p, err := c.Start(ctx, plan, info)
	if err != nil {
		return nil, err
	}
	answer, err := authorize(ctx, p)
	if err != nil {
		return nil, err
	}
	g, err := c.Finish(ctx, p, answer)
	if err == nil && g.Scope == "" {
		g.Scope = strings.Join(plan.Scopes, " ") // the server said none: as asked
	}
	return g, err
}

// AuthorizeNonInteractive is an authorize for SignIn without a person:
// it GETs the authorization URL and follows redirects (under the
// outgoing-request policy) until one goes to the redirect URI, whose
// query it returns. Only an authorization server that approves at once
// answers so (a test server, or one with a standing consent).
func (c *Client) AuthorizeNonInteractive(ctx context.Context, p *Pending) (url.Values, error) {
	hc, err := c.httpClient(ctx, p.Plan.Resource)
	if err != nil {
		return nil, err
	}
	defer hc.CloseIdleConnections()
	own := *hc // its CheckRedirect is changed below; the one HTTP gave is left as it is
	hc = &own
	var answer *url.URL
	policyRedirect := hc.CheckRedirect
	if policyRedirect == nil {
		policyRedirect = func(_ *http.Request, via []*http.Request) error {
			if len(via) >= 10 { // net/http's default
				return errors.New("stopped after 10 redirects")
			}
			return nil
		}
	}
	redirect, err := url.Parse(p.RedirectURI)
	if err != nil {
		return nil, errorf("authorization", "invalid redirect URI: %v", err)
	}
	toRedirect := func(u *url.URL) bool {
		return u.Scheme == redirect.Scheme && u.Host == redirect.Host && u.Path == redirect.Path
	}
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if toRedirect(req.URL) {
			answer = req.URL
			return http.ErrUseLastResponse
		}
		return policyRedirect(req, via)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL, nil)
	if err != nil {
		return nil, errorf("authorization", "invalid authorization URL: %v", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, errorf("authorization", "GET the authorization endpoint: %v", err)
	}
	resp.Body.Close()
	if answer == nil {
		if loc, err := resp.Location(); err == nil && toRedirect(loc) {
			answer = loc
		}
	}
	if answer == nil {
		return nil, errorf("authorization", "the authorization server did not approve at once (HTTP %d): sign in with a browser", resp.StatusCode)
	}
	return answer.Query(), nil
}

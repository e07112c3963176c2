package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// The OAuth-protected mode (-oauth-issuer, http transport only) makes the
// fixture an OAuth 2.1 resource server as the MCP authorization
// specification describes one:
//
//   - a request to /mcp without a valid bearer token is answered 401 with
//     WWW-Authenticate: Bearer resource_metadata="<base>/.well-known/
//     oauth-protected-resource/mcp" (and scope="<-oauth-scopes>" when
//     set); an invalid token adds error="invalid_token";
//   - a valid token whose scope claim lacks -oauth-required-scope is
//     answered 403 with error="insufficient_scope" and
//     scope="<-oauth-scopes and the required scope>";
//   - the protected resource metadata (RFC 9728) is served at
//     /.well-known/oauth-protected-resource/mcp and
//     /.well-known/oauth-protected-resource.
//
// A token is valid when it is a JWT access token (typ at+jwt, RFC 9068)
// signed by a key of the issuer's JWKS, with iss the issuer, aud naming
// the MCP endpoint's URL and exp not passed. The issuer's metadata
// (RFC 8414, else OpenID discovery) and JWKS are fetched on the first
// token and the JWKS again whenever a token names an unknown key. The
// fixture sends requests to the issuer's origin only: metadata naming
// another issuer or a jwks_uri elsewhere is refused, redirects are not
// followed and no proxy is used.

const (
	// protectedResourcePath is where the protected resource metadata is
	// served; the path of the MCP endpoint follows it (RFC 9728 section 3).
	protectedResourcePath = "/.well-known/oauth-protected-resource"
	// maxIssuerResponse bounds the metadata and JWKS documents read.
	maxIssuerResponse = 1 << 20
	// issuerTimeout bounds each request to the issuer.
	issuerTimeout = 10 * time.Second
)

// tokenAlgorithms are the signature algorithms accepted on access tokens.
var tokenAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}

// errIssuerUnavailable marks a failure to read the issuer's metadata or
// keys, for which no token can be judged.
var errIssuerUnavailable = errors.New("the authorization server cannot be read")

// oauthGuard is the resource server in front of the MCP endpoint.
type oauthGuard struct {
	// resource is the MCP endpoint's URL: the audience a token must name.
	resource string
	// metadataURL is where the protected resource metadata is served.
	metadataURL string
	// name is reported as resource_name.
	name string
	// scopes are -oauth-scopes, hinted in every 401.
	scopes []string
	// required is -oauth-required-scope ("" for none).
	required string
	// keys verifies tokens against the issuer.
	keys *issuerKeys
}

// newOAuthGuard returns the guard of the MCP endpoint at baseURL+endpoint
// for the issuer and scopes in cfg.
func newOAuthGuard(cfg config, baseURL, endpoint string) *oauthGuard {
	return &oauthGuard{
		resource:    baseURL + endpoint,
		metadataURL: baseURL + protectedResourcePath + endpoint,
		name:        cfg.name,
		scopes:      strings.Fields(cfg.oauthScopes),
		required:    cfg.oauthRequiredScope,
		keys:        newIssuerKeys(cfg.oauthIssuer),
	}
}

// routes registers the protected resource metadata on mux and the MCP
// endpoint, behind the guard.
func (g *oauthGuard) routes(mux *http.ServeMux, endpoint string, mcp http.Handler) {
	mux.Handle(endpoint, g.protect(mcp))
	mux.Handle(protectedResourcePath+endpoint, g.metadata())
	mux.Handle(protectedResourcePath, g.metadata())
}

// allScopes returns -oauth-scopes followed by the required scope, if it
// is not among them.
func (g *oauthGuard) allScopes() []string {
	if g.required == "" || slices.Contains(g.scopes, g.required) {
		return g.scopes
	}
	return append(slices.Clip(g.scopes), g.required)
}

// metadata serves the protected resource metadata (RFC 9728).
func (g *oauthGuard) metadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "mcp-fixture: method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Resource               string   `json:"resource"`
			AuthorizationServers   []string `json:"authorization_servers"`
			ScopesSupported        []string `json:"scopes_supported,omitempty"`
			BearerMethodsSupported []string `json:"bearer_methods_supported"`
			ResourceName           string   `json:"resource_name"`
		}{g.resource, []string{g.keys.issuer}, g.allScopes(), []string{"header"}, g.name})
	})
}

// protect lets through to next only the requests that carry a valid bearer
// token with the required scope.
func (g *oauthGuard) protect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, raw, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		raw = strings.TrimSpace(raw)
		if !strings.EqualFold(scheme, "Bearer") || raw == "" {
			_, _ = io.Copy(io.Discard, r.Body)
			g.challenge(w, http.StatusUnauthorized, "", "sign-in required: send an access token in Authorization: Bearer", g.scopes)
			return
		}
		token, err := g.keys.verify(r.Context(), raw, g.resource)
		switch {
		case errors.Is(err, errIssuerUnavailable):
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, "mcp-fixture: "+err.Error(), http.StatusServiceUnavailable)
			return
		case err != nil:
			_, _ = io.Copy(io.Discard, r.Body)
			g.challenge(w, http.StatusUnauthorized, "invalid_token", err.Error(), g.scopes)
			return
		case g.required != "" && !slices.Contains(token.scopes(), g.required):
			_, _ = io.Copy(io.Discard, r.Body)
			g.challenge(w, http.StatusForbidden, "insufficient_scope", fmt.Sprintf("the token lacks scope %s", g.required), g.allScopes())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// challenge answers with status and a Bearer WWW-Authenticate challenge
// (RFC 6750 section 3) naming errCode (unless empty), the protected
// resource metadata and scopes (unless empty).
func (g *oauthGuard) challenge(w http.ResponseWriter, status int, errCode, description string, scopes []string) {
	quote := func(s string) string { return `"` + s + `"` }
	var params []string
	if errCode != "" {
		params = append(params, "error="+quote(errCode), "error_description="+quote(headerSafe(description)))
	}
	params = append(params, "resource_metadata="+quote(g.metadataURL))
	if len(scopes) > 0 {
		params = append(params, "scope="+quote(strings.Join(scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if errCode == "" {
		errCode = "unauthorized"
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"error": errCode, "error_description": description})
}

// headerSafe returns s with the characters an error_description may not
// hold (RFC 6750 section 3: only printable ASCII without " and \) replaced.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"':
			return '\''
		case r == '\\' || r < 0x20 || r > 0x7e:
			return '?'
		}
		return r
	}, s)
}

// accessToken holds the claims of a verified access token that the guard
// reads besides the registered ones.
type accessToken struct {
	jwt.Claims
	// Scope is the space-separated scope claim of RFC 9068.
	Scope string `json:"scope"`
}

// scopes returns the token's scopes.
func (t *accessToken) scopes() []string { return strings.Fields(t.Scope) }

// issuerKeys verifies access tokens against the keys of one issuer, which
// it fetches when first needed and again when a token names a key it does
// not know. It is safe for concurrent use.
type issuerKeys struct {
	// issuer is the issuer identifier, -oauth-issuer.
	issuer string
	// client sends every request to the issuer.
	client *http.Client
	// now is the clock that exp and nbf are judged by.
	now func() time.Time

	mu      sync.Mutex // guards the fields below and serializes fetches
	jwksURI string     // from the issuer's metadata; "" until read
	keys    jose.JSONWebKeySet
}

// newIssuerKeys returns the verifier of tokens issued by issuer. Its
// client follows no redirect and uses no proxy.
func newIssuerKeys(issuer string) *issuerKeys {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	return &issuerKeys{
		issuer: issuer,
		client: &http.Client{
			Transport:     transport,
			Timeout:       issuerTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now: time.Now,
	}
}

// verify checks that raw is a JWT access token for audience signed by the
// issuer and not expired, and returns its claims. Errors that wrap
// errIssuerUnavailable say that the issuer could not be read; any other
// says what is wrong with the token.
func (k *issuerKeys) verify(ctx context.Context, raw, audience string) (*accessToken, error) {
	tok, err := jwt.ParseSigned(raw, tokenAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("the token is not a signed JWT: %v", err)
	}
	header := tok.Headers[0]
	if typ, _ := header.ExtraHeaders[jose.HeaderType].(string); !strings.EqualFold(typ, "at+jwt") && !strings.EqualFold(typ, "application/at+jwt") {
		return nil, fmt.Errorf("the token's typ is %q, not at+jwt", typ)
	}
	key, err := k.key(ctx, header.KeyID)
	if err != nil {
		return nil, err
	}
	var claims accessToken
	if err := tok.Claims(key, &claims); err != nil {
		return nil, fmt.Errorf("the token's signature does not verify: %v", err)
	}
	now := k.now()
	switch {
	case claims.Issuer != k.issuer:
		return nil, fmt.Errorf("the token's iss is %q, not %q", claims.Issuer, k.issuer)
	case !claims.Audience.Contains(audience):
		return nil, fmt.Errorf("the token's aud %q does not name %s", []string(claims.Audience), audience)
	case claims.Expiry == nil:
		return nil, errors.New("the token has no exp")
	case !now.Before(claims.Expiry.Time()):
		return nil, fmt.Errorf("the token expired at %s", claims.Expiry.Time().UTC().Format(time.RFC3339))
	case claims.NotBefore != nil && now.Before(claims.NotBefore.Time()):
		return nil, fmt.Errorf("the token is not valid before %s", claims.NotBefore.Time().UTC().Format(time.RFC3339))
	}
	return &claims, nil
}

// key returns the issuer's signing key with the given id, reading the
// issuer's metadata and JWKS when the key is not known yet. A token
// without a key id may use the JWKS's only key.
func (k *issuerKeys) key(ctx context.Context, kid string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key := k.lookup(kid); key != nil {
		return key, nil
	}
	if err := k.fetch(ctx); err != nil {
		return nil, fmt.Errorf("%w: %v", errIssuerUnavailable, err)
	}
	if key := k.lookup(kid); key != nil {
		return key, nil
	}
	return nil, fmt.Errorf("the token's key %q is not among the issuer's keys", kid)
}

// lookup finds the signing key kid among the known keys; k.mu is held.
func (k *issuerKeys) lookup(kid string) *jose.JSONWebKey {
	var found []jose.JSONWebKey
	if kid == "" {
		found = k.keys.Keys
	} else {
		found = k.keys.Key(kid)
	}
	if len(found) != 1 || found[0].Use == "enc" {
		return nil
	}
	return &found[0]
}

// fetch reads the issuer's metadata (once) and its JWKS; k.mu is held.
func (k *issuerKeys) fetch(ctx context.Context) error {
	if k.jwksURI == "" {
		jwksURI, err := k.discover(ctx)
		if err != nil {
			return err
		}
		k.jwksURI = jwksURI
	}
	var set jose.JSONWebKeySet
	if err := k.getJSON(ctx, k.jwksURI, &set); err != nil {
		return err
	}
	k.keys = set
	return nil
}

// discover reads the issuer's authorization server metadata (RFC 8414),
// else its OpenID Provider metadata, and returns its jwks_uri.
func (k *issuerKeys) discover(ctx context.Context) (string, error) {
	var errs []error
	for _, u := range metadataURLs(k.issuer) {
		var m struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := k.getJSON(ctx, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case m.Issuer != k.issuer:
			return "", fmt.Errorf("%s names issuer %q, not %q", u, m.Issuer, k.issuer)
		case !sameOrigin(m.JWKSURI, k.issuer):
			return "", fmt.Errorf("%s names jwks_uri %q, outside the issuer %s", u, m.JWKSURI, k.issuer)
		}
		return m.JWKSURI, nil
	}
	return "", errors.Join(errs...)
}

// getJSON decodes the JSON document at u into v; anything but a 200 is an
// error.
func (k *issuerKeys) getJSON(ctx context.Context, u string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, issuerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxIssuerResponse)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %v", u, err)
	}
	return nil
}

// metadataURLs returns where the metadata of issuer may be: RFC 8414's
// well-known URI (inserted before the issuer's path), then OpenID
// discovery's (appended to it).
func metadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	return []string{
		u.Scheme + "://" + u.Host + "/.well-known/oauth-authorization-server" + path,
		u.Scheme + "://" + u.Host + path + "/.well-known/openid-configuration",
	}
}

// sameOrigin reports whether a and b are URLs of the same scheme, host and
// port.
func sameOrigin(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && ua.Scheme != "" && ua.Host != "" &&
		strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host)
}

// validIssuer checks an -oauth-issuer value: an absolute http or https
// URL without query or fragment.
func validIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("invalid -oauth-issuer %q: want an http or https URL without query or fragment", issuer)
	}
	return nil
}

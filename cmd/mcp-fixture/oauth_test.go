package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/switchboard-dev/switchboard/internal/oidctest"
)

// startProvider runs e2e/oidc/provider.mjs with args (see oidctest.Start)
// and returns its issuer.
func startProvider(t *testing.T, args ...string) string {
	t.Helper()
	return oidctest.Start(t, "../..", args...)
}

// noRedirects is an HTTP client that returns redirects instead of
// following them.
var noRedirects = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// getJSON decodes the JSON document at u into v, failing t unless it is
// served with 200.
func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := noRedirects.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %s %s; want 200", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", u, err, body)
	}
}

// postJSON posts body (a form when it is url.Values, else JSON) to u and
// returns the status and the decoded JSON answer.
func postJSON(t *testing.T, u string, body any) (int, map[string]any) {
	t.Helper()
	var resp *http.Response
	var err error
	if form, ok := body.(url.Values); ok {
		resp, err = noRedirects.PostForm(u, form)
	} else {
		data, _ := json.Marshal(body)
		resp, err = noRedirects.Post(u, "application/json", strings.NewReader(string(data)))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(data) > 0 {
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("POST %s = %s with %q, not JSON", u, resp.Status, data)
		}
	}
	return resp.StatusCode, out
}

// authServer is the part of the authorization server's metadata the
// tests use.
type authServer struct {
	Issuer                string   `json:"issuer"`
	AuthorizationEndpoint string   `json:"authorization_endpoint"`
	TokenEndpoint         string   `json:"token_endpoint"`
	RegistrationEndpoint  string   `json:"registration_endpoint"`
	RevocationEndpoint    string   `json:"revocation_endpoint"`
	JWKSURI               string   `json:"jwks_uri"`
	CodeChallengeMethods  []string `json:"code_challenge_methods_supported"`
	IssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	ScopesSupported       []string `json:"scopes_supported"`
}

// oauthClient is a dynamically registered public client of an
// authorization server, signing in with auto-approved authorization
// requests.
type oauthClient struct {
	t           *testing.T
	as          authServer
	id          string
	redirectURI string
}

// tokens is a token endpoint answer.
type tokens struct {
	access, refresh string
}

// authorize runs an authorization request for resource and scope with
// PKCE S256 and a state, checks the redirect back (code, state, iss) and
// exchanges the code for tokens.
func (c *oauthClient) authorize(resource, scope string) tokens {
	c.t.Helper()
	back, verifier := c.code(resource, scope, true)
	if back.Get("code") == "" {
		c.t.Fatalf("authorization request for %s, scope %q, redirected back with %v; want a code", resource, scope, back)
	}
	status, answer := postJSON(c.t, c.as.TokenEndpoint, url.Values{
		"grant_type": {"authorization_code"}, "code": {back.Get("code")}, "redirect_uri": {c.redirectURI},
		"client_id": {c.id}, "code_verifier": {verifier}, "resource": {resource},
	})
	return c.tokens("authorization_code", status, answer)
}

// code runs an authorization request (with a code challenge if pkce),
// checks the redirect back to the client (state and iss) and returns its
// query, which holds the code or an error, and the code verifier.
func (c *oauthClient) code(resource, scope string, pkce bool) (back url.Values, verifier string) {
	c.t.Helper()
	verifier = rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	state := rand.Text()
	q := url.Values{
		"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirectURI},
		"state": {state}, "resource": {resource}, "scope": {scope},
	}
	if pkce {
		q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
		q.Set("code_challenge_method", "S256")
	}
	resp, err := noRedirects.Get(c.as.AuthorizationEndpoint + "?" + q.Encode())
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	location := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(location, c.redirectURI+"?") {
		c.t.Fatalf("authorization request = %s, Location %q, %s; want 303 to %s?…", resp.Status, location, body, c.redirectURI)
	}
	u, _ := url.Parse(location)
	back = u.Query()
	if back.Get("state") != state || back.Get("iss") != c.as.Issuer {
		c.t.Fatalf("redirect back = %s; want state %s and iss %s", location, state, c.as.Issuer)
	}
	return back, verifier
}

// refresh redeems a refresh token for resource.
func (c *oauthClient) refresh(refreshToken, resource string) (int, map[string]any) {
	c.t.Helper()
	return postJSON(c.t, c.as.TokenEndpoint, url.Values{
		"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}, "client_id": {c.id}, "resource": {resource},
	})
}

// tokens checks a token endpoint answer to grant and returns its tokens.
func (c *oauthClient) tokens(grant string, status int, answer map[string]any) tokens {
	c.t.Helper()
	access, _ := answer["access_token"].(string)
	refresh, _ := answer["refresh_token"].(string)
	if status != http.StatusOK || answer["token_type"] != "Bearer" || strings.Count(access, ".") != 2 || refresh == "" {
		c.t.Fatalf("%s grant = %d %v; want 200 with a Bearer JWT access token and a refresh token", grant, status, answer)
	}
	return tokens{access: access, refresh: refresh}
}

// claimsOf returns the payload of a JWT, unverified, for messages and
// expiry.
func claimsOf(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	if err == nil {
		err = json.Unmarshal(data, &claims)
	}
	if err != nil {
		t.Fatalf("access token payload %q: %v", parts[1], err)
	}
	return claims
}

// mcpChallenge posts an initialize request to endpoint with token (none
// if empty) and returns the status and WWW-Authenticate header.
func mcpChallenge(t *testing.T, endpoint, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// listTools initializes an MCP session with token and lists the first
// page of tools, failing t on any error.
func listTools(t *testing.T, endpoint, token string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	trans, err := transport.NewStreamableHTTP(endpoint, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(trans)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	initialize(ctx, t, c)
	res, err := c.ListToolsByPage(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list with a valid token: %v", err)
	}
	return toolNames(res.Tools)
}

// TestOAuthWithRealAuthorizationServer signs in to the fixture's OAuth
// mode through e2e/oidc/provider.mjs as an MCP client would, with plain
// HTTP requests: 401 and protected resource metadata, authorization
// server metadata, dynamic registration, authorization code with PKCE
// and resource, a JWT that opens the MCP session, refusal of a token for
// another resource, of an expired token (then refreshed) and of a token
// without the required scope, and revocation of a refresh token.
func TestOAuthWithRealAuthorizationServer(t *testing.T) {
	const accessTTL = 3 // seconds
	issuer := startProvider(t, "--auto-approve", "--access-ttl", strconv.Itoa(accessTTL), "--scopes", "mcp:read mcp:write")
	endpoint := startInProcess(t, "-transport", "http", "-oauth-issuer", issuer, "-oauth-scopes", "mcp:read mcp:write")
	base := strings.TrimSuffix(endpoint, "/mcp")

	// Unauthenticated: 401 naming the protected resource metadata.
	status, challenge := mcpChallenge(t, endpoint, "")
	wantChallenge := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp:read mcp:write"`, base)
	if status != http.StatusUnauthorized || challenge != wantChallenge {
		t.Fatalf("POST /mcp without a token = %d, WWW-Authenticate %q; want 401, %q", status, challenge, wantChallenge)
	}

	type resourceMetadata struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
		BearerMethods        []string `json:"bearer_methods_supported"`
		ResourceName         string   `json:"resource_name"`
	}
	wantPRM := resourceMetadata{endpoint, []string{issuer}, []string{"mcp:read", "mcp:write"}, []string{"header"}, "mcp-fixture"}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		var prm resourceMetadata
		getJSON(t, base+path, &prm)
		if !reflect.DeepEqual(prm, wantPRM) {
			t.Errorf("GET %s = %+v; want %+v", path, prm, wantPRM)
		}
	}

	var as authServer
	getJSON(t, issuer+"/.well-known/oauth-authorization-server", &as)
	if as.Issuer != issuer || !as.IssParameterSupported || !reflect.DeepEqual(as.CodeChallengeMethods, []string{"S256"}) ||
		as.RegistrationEndpoint == "" || as.RevocationEndpoint == "" {
		t.Fatalf("authorization server metadata = %+v; want issuer %s, iss parameter, S256 only, registration and revocation", as, issuer)
	}

	redirectURI := "http://127.0.0.1:47613/oauth/callback"
	status, registered := postJSON(t, as.RegistrationEndpoint, map[string]any{
		"client_name": "mcp-fixture test", "redirect_uris": []string{redirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none",
	})
	clientID, _ := registered["client_id"].(string)
	if status != http.StatusCreated || clientID == "" {
		t.Fatalf("dynamic registration = %d %v; want 201 with a client_id", status, registered)
	}
	c := &oauthClient{t: t, as: as, id: clientID, redirectURI: redirectURI}

	// PKCE is required and checked.
	if back, _ := c.code(endpoint, "mcp:read", false); back.Get("code") != "" || back.Get("error") != "invalid_request" {
		t.Errorf("authorization request without a code challenge redirected back with %v; want error invalid_request", back)
	}
	back, _ := c.code(endpoint, "mcp:read", true)
	status, answer := postJSON(t, as.TokenEndpoint, url.Values{
		"grant_type": {"authorization_code"}, "code": {back.Get("code")}, "redirect_uri": {redirectURI},
		"client_id": {clientID}, "code_verifier": {rand.Text() + rand.Text()}, "resource": {endpoint},
	})
	if status != http.StatusBadRequest || answer["error"] != "invalid_grant" {
		t.Errorf("code exchange with the wrong code verifier = %d %v; want 400 invalid_grant", status, answer)
	}

	// A token for this resource opens the MCP session.
	signedIn := c.authorize(endpoint, "mcp:read mcp:write")
	if got := listTools(t, endpoint, signedIn.access); !reflect.DeepEqual(got, expectedNames(10)) {
		t.Errorf("tools/list with a valid token = %v; want the first page, tool_000..tool_009", got)
	}
	if claims := claimsOf(t, signedIn.access); claims["aud"] != endpoint || claims["iss"] != issuer || claims["scope"] != "mcp:read mcp:write" {
		t.Errorf("access token claims = %v; want aud %s, iss %s, scope mcp:read mcp:write", claims, endpoint, issuer)
	}

	// A token for another resource is refused.
	other := c.authorize("https://other.example/mcp", "mcp:read mcp:write")
	status, challenge = mcpChallenge(t, endpoint, other.access)
	if status != http.StatusUnauthorized || !strings.HasPrefix(challenge, `Bearer error="invalid_token", error_description="the token's aud`) {
		t.Errorf("POST /mcp with a token for another resource = %d, WWW-Authenticate %q; want 401 invalid_token about aud", status, challenge)
	}

	// Step-up: a fixture that requires mcp:write refuses a token without it.
	stepUp := startInProcess(t, "-transport", "http", "-oauth-issuer", issuer, "-oauth-scopes", "mcp:read", "-oauth-required-scope", "mcp:write")
	readOnly := c.authorize(stepUp, "mcp:read")
	status, challenge = mcpChallenge(t, stepUp, readOnly.access)
	wantChallenge = fmt.Sprintf(`Bearer error="insufficient_scope", error_description="the token lacks scope mcp:write", resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="mcp:read mcp:write"`,
		strings.TrimSuffix(stepUp, "/mcp"))
	if status != http.StatusForbidden || challenge != wantChallenge {
		t.Errorf("POST /mcp with a token without the required scope = %d, WWW-Authenticate %q; want 403, %q", status, challenge, wantChallenge)
	}
	if got := listTools(t, stepUp, c.authorize(stepUp, "mcp:read mcp:write").access); len(got) == 0 {
		t.Errorf("tools/list with the required scope listed nothing")
	}

	// Once expired the token is refused; the refresh token gives a new one.
	exp, _ := claimsOf(t, signedIn.access)["exp"].(float64)
	time.Sleep(time.Until(time.Unix(int64(exp), 0).Add(time.Second)))
	status, challenge = mcpChallenge(t, endpoint, signedIn.access)
	if status != http.StatusUnauthorized || !strings.HasPrefix(challenge, `Bearer error="invalid_token", error_description="the token expired`) {
		t.Errorf("POST /mcp with an expired token = %d, WWW-Authenticate %q; want 401 invalid_token, expired", status, challenge)
	}
	status, answer = c.refresh(signedIn.refresh, endpoint)
	refreshed := c.tokens("refresh_token", status, answer)
	if refreshed.access == signedIn.access {
		t.Errorf("refresh gave the expired access token again")
	}
	if got := listTools(t, endpoint, refreshed.access); len(got) == 0 {
		t.Errorf("tools/list with the refreshed token listed nothing")
	}

	// A revoked refresh token is refused.
	status, answer = postJSON(t, as.RevocationEndpoint, url.Values{
		"token": {refreshed.refresh}, "token_type_hint": {"refresh_token"}, "client_id": {clientID},
	})
	if status != http.StatusOK {
		t.Fatalf("revocation = %d %v; want 200", status, answer)
	}
	if status, answer = c.refresh(refreshed.refresh, endpoint); status != http.StatusBadRequest || answer["error"] != "invalid_grant" {
		t.Errorf("refresh with a revoked refresh token = %d %v; want 400 invalid_grant", status, answer)
	}
}

// formPattern and hiddenPattern find the form of oidc-provider's login
// and consent pages and its hidden fields.
var (
	formPattern   = regexp.MustCompile(`<form[^>]*action="([^"]+)"[^>]*method="post"`)
	hiddenPattern = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"`)
)

// TestOAuthProviderLoginPages signs in through provider.mjs's login and
// consent pages, as a person (or Playwright) in a browser would: the
// login name typed becomes the token's subject. The client is known by its
// Client ID Metadata Document (--cimd, registration turned off), and the
// provider serves RFC 8414 metadata only (--discovery oauth).
func TestOAuthProviderLoginPages(t *testing.T) {
	issuer := startProvider(t, "--cimd", "--no-registration", "--discovery", "oauth")
	resource := "http://127.0.0.1:47614/mcp"
	redirectURI := "http://127.0.0.1:47615/oauth/callback"
	var as struct {
		authServer
		CIMD bool `json:"client_id_metadata_document_supported"`
	}
	getJSON(t, issuer+"/.well-known/oauth-authorization-server", &as)
	if !as.CIMD || as.RegistrationEndpoint != "" {
		t.Errorf("metadata = %+v; want client_id_metadata_document_supported and no registration_endpoint", as)
	}
	oidc, err := noRedirects.Get(issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	oidc.Body.Close()
	if oidc.StatusCode != http.StatusNotFound {
		t.Errorf("GET /.well-known/openid-configuration with --discovery oauth = %s; want 404", oidc.Status)
	}
	// The provider fetches https://127.0.0.1:PORT/… documents over http.
	var clientID string
	cimd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"client_id": clientID, "client_name": "mcp-fixture test", "redirect_uris": []string{redirectURI},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
		})
	}))
	defer cimd.Close()
	clientID = "https://" + strings.TrimPrefix(cimd.URL, "http://") + "/client.json"

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirectURI) {
			return http.ErrUseLastResponse // the client's redirect URI: nothing listens there
		}
		return nil
	}}
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	resp, err := browser.Get(as.AuthorizationEndpoint + "?" + url.Values{
		"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirectURI}, "state": {"s1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"},
		"resource": {resource}, "scope": {"mcp"},
	}.Encode())
	for _, prompt := range []string{"login", "consent"} {
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		form := formPattern.FindSubmatch(page)
		fields := url.Values{}
		for _, m := range hiddenPattern.FindAllSubmatch(page, -1) {
			fields.Set(string(m[1]), string(m[2]))
		}
		if resp.StatusCode != http.StatusOK || form == nil || fields.Get("prompt") != prompt {
			t.Fatalf("%s page = %s with form %q and fields %v; want 200, a form, prompt=%s:\n%s", prompt, resp.Status, form, fields, prompt, page)
		}
		if prompt == "login" {
			fields.Set("login", "alice")
			fields.Set("password", "anything")
		}
		resp, err = browser.PostForm(html.UnescapeString(string(form[1])), fields)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || back.Query().Get("code") == "" || back.Query().Get("iss") != issuer {
		t.Fatalf("after consent = %s to %q; want 303 to %s with code and iss", resp.Status, back, redirectURI)
	}
	status, answer := postJSON(t, as.TokenEndpoint, url.Values{
		"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")}, "redirect_uri": {redirectURI},
		"client_id": {clientID}, "code_verifier": {verifier}, "resource": {resource},
	})
	access, _ := answer["access_token"].(string)
	if status != http.StatusOK || strings.Count(access, ".") != 2 {
		t.Fatalf("code exchange = %d %v; want a JWT access token", status, answer)
	}
	if claims := claimsOf(t, access); claims["sub"] != "alice" || claims["aud"] != resource {
		t.Errorf("access token claims = %v; want sub alice, aud %s", claims, resource)
	}
}

// fakeIssuer serves an authorization server's metadata and JWKS from
// memory, to force the token verifier's error paths.
type fakeIssuer struct {
	*httptest.Server
	// keys is the JWKS served.
	keys atomic.Pointer[jose.JSONWebKeySet]
	// jwksFetches counts the requests for it.
	jwksFetches atomic.Int32
	// metadata, if set, changes the metadata served.
	metadata func(m map[string]string)
}

// newFakeIssuer starts a fake issuer that serves OpenID discovery only
// (no RFC 8414 metadata) and the public keys given.
func newFakeIssuer(t *testing.T, keys ...jose.JSONWebKey) *fakeIssuer {
	f := &fakeIssuer{}
	f.keys.Store(&jose.JSONWebKeySet{Keys: keys})
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			m := map[string]string{"issuer": f.URL, "jwks_uri": f.URL + "/jwks"}
			if f.metadata != nil {
				f.metadata(m)
			}
			_ = json.NewEncoder(w).Encode(m)
		case "/jwks":
			f.jwksFetches.Add(1)
			_ = json.NewEncoder(w).Encode(f.keys.Load())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// signingKey is an RSA key with its key id.
type signingKey struct {
	kid     string
	private *rsa.PrivateKey
}

// newSigningKey makes an RSA key named kid.
func newSigningKey(t *testing.T, kid string) signingKey {
	t.Helper()
	private, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{kid, private}
}

// public returns the key's public JWK.
func (k signingKey) public() jose.JSONWebKey {
	return jose.JSONWebKey{Key: &k.private.PublicKey, KeyID: k.kid, Algorithm: string(jose.RS256), Use: "sig"}
}

// sign returns claims as a JWT signed with the key, its kid and typ in the
// header.
func (k signingKey) sign(t *testing.T, typ string, claims any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.private, KeyID: k.kid}},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func TestOAuthVerifierRefusesBadTokens(t *testing.T) {
	current := newSigningKey(t, "current")
	stranger := newSigningKey(t, "stranger")
	impostor := newSigningKey(t, "current") // another key under the known kid
	issuer := newFakeIssuer(t, current.public())
	const audience = "http://127.0.0.1:1/mcp"
	now := time.Unix(1_900_000_000, 0)
	claims := func(change func(c map[string]any)) map[string]any {
		c := map[string]any{"iss": issuer.URL, "aud": audience, "sub": "test-user", "scope": "a b",
			"iat": now.Unix() - 10, "exp": now.Unix() + 60}
		if change != nil {
			change(c)
		}
		return c
	}
	hs256, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: []byte("0123456789abcdef0123456789abcdef")}, nil)
	hsToken, _ := jwt.Signed(hs256).Claims(claims(nil)).Serialize()

	keys := newIssuerKeys(issuer.URL)
	keys.now = func() time.Time { return now }
	for _, tc := range []struct {
		name, token, wantErr string
	}{
		{"valid", current.sign(t, "at+jwt", claims(nil)), ""},
		{"media type typ", current.sign(t, "application/at+jwt", claims(func(c map[string]any) { c["aud"] = []string{"x", audience} })), ""},
		{"id token typ", current.sign(t, "JWT", claims(nil)), `the token's typ is "JWT", not at+jwt`},
		{"other issuer", current.sign(t, "at+jwt", claims(func(c map[string]any) { c["iss"] = "http://other" })), `the token's iss is "http://other"`},
		{"other audience", current.sign(t, "at+jwt", claims(func(c map[string]any) { c["aud"] = "http://127.0.0.1:2/mcp" })), `the token's aud ["http://127.0.0.1:2/mcp"] does not name`},
		{"expired", current.sign(t, "at+jwt", claims(func(c map[string]any) { c["exp"] = now.Unix() - 1 })), "the token expired at"},
		{"expiring now", current.sign(t, "at+jwt", claims(func(c map[string]any) { c["exp"] = now.Unix() })), "the token expired at"},
		{"no exp", current.sign(t, "at+jwt", claims(func(c map[string]any) { delete(c, "exp") })), "the token has no exp"},
		{"not yet valid", current.sign(t, "at+jwt", claims(func(c map[string]any) { c["nbf"] = now.Unix() + 5 })), "the token is not valid before"},
		{"unknown key", stranger.sign(t, "at+jwt", claims(nil)), `the token's key "stranger" is not among the issuer's keys`},
		{"wrong key", impostor.sign(t, "at+jwt", claims(nil)), "the token's signature does not verify"},
		{"HMAC", hsToken, "the token is not a signed JWT"},
		{"not a JWT", "not-a-jwt", "the token is not a signed JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			token, err := keys.verify(context.Background(), tc.token, audience)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("verify = %v; want a valid token", err)
			case tc.wantErr == "":
				if token.Subject != "test-user" || !reflect.DeepEqual(token.scopes(), []string{"a", "b"}) {
					t.Errorf("verify = sub %q, scopes %q; want test-user, [a b]", token.Subject, token.scopes())
				}
			case err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, errIssuerUnavailable):
				t.Errorf("verify = %v; want an error about the token containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestOAuthVerifierRefetchesKeysForUnknownKid(t *testing.T) {
	first, second := newSigningKey(t, "first"), newSigningKey(t, "second")
	issuer := newFakeIssuer(t, first.public())
	const audience = "http://127.0.0.1:1/mcp"
	claims := map[string]any{"iss": issuer.URL, "aud": audience, "exp": time.Now().Add(time.Hour).Unix()}
	keys := newIssuerKeys(issuer.URL)
	verify := func(k signingKey) error {
		_, err := keys.verify(context.Background(), k.sign(t, "at+jwt", claims), audience)
		return err
	}

	for range 3 {
		if err := verify(first); err != nil {
			t.Fatalf("verify(first key) = %v", err)
		}
	}
	if n := issuer.jwksFetches.Load(); n != 1 {
		t.Errorf("JWKS fetched %d times for three tokens of one key; want 1", n)
	}
	issuer.keys.Store(&jose.JSONWebKeySet{Keys: []jose.JSONWebKey{second.public()}}) // rotation
	if err := verify(second); err != nil {
		t.Fatalf("verify(rotated key) = %v; want the JWKS fetched again", err)
	}
	if n := issuer.jwksFetches.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times after a rotation; want 2", n)
	}
	if err := verify(first); err == nil || errors.Is(err, errIssuerUnavailable) {
		t.Errorf("verify(retired key) = %v; want the token refused", err)
	}
}

func TestOAuthVerifierReadsOnlyTheIssuer(t *testing.T) {
	key := newSigningKey(t, "k")
	elsewhere := newFakeIssuer(t, key.public())
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, tc := range []struct {
		name     string
		metadata func(m map[string]string)
		issuer   string // if set, instead of the fake's URL
		wantErr  string
	}{
		{name: "jwks_uri on another origin", metadata: func(m map[string]string) { m["jwks_uri"] = elsewhere.URL + "/jwks" }, wantErr: "outside the issuer"},
		{name: "metadata of another issuer", metadata: func(m map[string]string) { m["issuer"] = elsewhere.URL }, wantErr: "names issuer"},
		{name: "issuer down", issuer: gone.URL, wantErr: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			issuer := newFakeIssuer(t, key.public())
			issuer.metadata = tc.metadata
			url := issuer.URL
			if tc.issuer != "" {
				url = tc.issuer
			}
			token := key.sign(t, "at+jwt", map[string]any{"iss": url, "aud": "a", "exp": time.Now().Add(time.Hour).Unix()})
			_, err := newIssuerKeys(url).verify(context.Background(), token, "a")
			if !errors.Is(err, errIssuerUnavailable) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("verify = %v; want the issuer unavailable, %q", err, tc.wantErr)
			}
			if n := elsewhere.jwksFetches.Load(); n != 0 {
				t.Errorf("the JWKS of another origin was fetched %d times", n)
			}
		})
	}
}

func TestOAuthMetadataURLs(t *testing.T) {
	for _, tc := range []struct {
		issuer string
		want   []string
	}{
		{"http://127.0.0.1:9", []string{"http://127.0.0.1:9/.well-known/oauth-authorization-server", "http://127.0.0.1:9/.well-known/openid-configuration"}},
		{"https://as.example/tenant/", []string{"https://as.example/.well-known/oauth-authorization-server/tenant", "https://as.example/tenant/.well-known/openid-configuration"}},
	} {
		if got := metadataURLs(tc.issuer); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("metadataURLs(%q) = %q; want %q", tc.issuer, got, tc.want)
		}
	}
}

func TestOAuthFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"issuer", []string{"-transport", "http", "-oauth-issuer", "http://127.0.0.1:9", "-oauth-scopes", "a b", "-oauth-required-scope", "c"}, ""},
		{"stdio", []string{"-oauth-issuer", "http://127.0.0.1:9"}, "-oauth-issuer works with -transport http and -mode normal only"},
		{"sse", []string{"-transport", "sse", "-oauth-issuer", "http://127.0.0.1:9"}, "-oauth-issuer works with -transport http and -mode normal only"},
		{"hostile mode", []string{"-transport", "http", "-mode", "html", "-oauth-issuer", "http://127.0.0.1:9"}, "-oauth-issuer works with -transport http and -mode normal only"},
		{"not a URL", []string{"-transport", "http", "-oauth-issuer", "127.0.0.1:9"}, `invalid -oauth-issuer "127.0.0.1:9"`},
		{"query", []string{"-transport", "http", "-oauth-issuer", "https://as.example/?x=1"}, "invalid -oauth-issuer"},
		{"scopes alone", []string{"-transport", "http", "-oauth-scopes", "a"}, "-oauth-scopes and -oauth-required-scope need -oauth-issuer"},
		{"two required scopes", []string{"-transport", "http", "-oauth-issuer", "http://127.0.0.1:9", "-oauth-required-scope", "a b"}, `invalid -oauth-required-scope "a b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseConfig(tc.args, noEnv, io.Discard)
			var usageErr *usageError
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("parseConfig(%q) = %v; want no error", tc.args, err)
			case tc.wantErr != "" && (!errors.As(err, &usageErr) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("parseConfig(%q) = %v; want a usage error containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

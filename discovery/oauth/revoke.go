package oauth

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// Revoke asks g's authorization server to revoke its tokens (RFC
// 7009), where it names a revocation endpoint: the refresh token, which
// revokes the grant with every token issued from it, else the access
// token. revoked is false when the server offers no revocation (the
// tokens then stay valid until they expire; forgetting them is all a
// sign-out can do). Revocation is best effort: the caller forgets the
// tokens whatever the answer. Its error holds none of g's secrets (see
// redacted).
func (c *Client) Revoke(ctx context.Context, g *Grant) (revoked bool, err error) {
	if g.Revocation == "" {
		return false, nil
	}
	form := url.Values{"token": {g.AccessToken}, "token_type_hint": {"access_token"}}
	if g.RefreshToken != "" {
		form = url.Values{"token": {g.RefreshToken}, "token_type_hint": {"refresh_token"}}
	}
	secrets := requestSecrets(g, form)
	defer func() { err = redacted(err, secrets) }()
	hc, err := c.httpClient(ctx, g.Resource)
	if err != nil {
		return false, err
	}
	defer hc.CloseIdleConnections()
	req, hc, err := clientRequest(ctx, hc, g, g.Revocation, form)
	if err != nil {
		return false, errorf("revocation", "invalid revocation endpoint: %v", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, errorf("revocation", "the revocation endpoint %s could not be reached: %v", g.Revocation, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyBytes))
	if resp.StatusCode != http.StatusOK {
		return false, errorf("revocation", "the revocation endpoint %s answered HTTP %d", g.Revocation, resp.StatusCode)
	}
	return true, nil
}

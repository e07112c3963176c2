package oauth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Redaction: what an authorization server may echo of a request (its
// tokens, the client secret, a code and its verifier), taken out of
// every error the client returns and of text built from one.

// requestSecrets returns the values a request to g's authorization
// server carries or g holds, in every form an echo of the request may
// hold them (see secretForms): the access and refresh tokens, the
// client secret (and the Basic credentials made of it), and the secret
// fields of form (an authorization code, a PKCE code verifier, a token
// to revoke).
func requestSecrets(g *Grant, form url.Values) []string {
	values := []string{g.AccessToken, g.RefreshToken, g.ClientSecret}
	if g.ClientSecret != "" {
		values = append(values, base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(g.ClientID)+":"+url.QueryEscape(g.ClientSecret))))
	}
	for _, k := range []string{"code", "code_verifier", "refresh_token", "token", "client_secret"} {
		values = append(values, form[k]...)
	}
	return secretForms(values...)
}

// redacted is err, a failure of a request to an authorization
// server, with secrets (see requestSecrets) and the values of credential
// parameters (RedactParams) taken out of what it says: a server may
// echo its request in error_description, or in error. An *Error is
// copied with its message and code redacted; another error whose text
// holds a secret becomes an error of the redacted text. Nothing that
// leaves the OAuth client's token and revocation requests skips it.
func redacted(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	if oe, ok := err.(*Error); ok {
		c := *oe
		c.Message = RedactParams(redact(c.Message, secrets))
		c.Code = redact(c.Code, secrets)
		return &c
	}
	if msg := RedactParams(redact(err.Error(), secrets)); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// secretForms returns the forms in which each value (of 4 bytes or more)
// may come back in an echo of a request that carried it: as sent,
// form-encoded (with upper- and lower-case hex), path-encoded and
// JSON-escaped (with and without HTML escapes, and with an escaped
// solidus). Each form is listed once, the longest first, so that a value
// inside another is redacted after it.
func secretForms(values ...string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 4 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, v := range values {
		if len(v) < 4 {
			continue
		}
		q := url.QueryEscape(v)
		add(v)
		add(q)
		add(lowerHex(q))
		add(url.PathEscape(v))
		for _, html := range []bool{true, false} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			enc.Encode(v)
			j := strings.TrimSuffix(b.String(), "\n")
			j = j[1 : len(j)-1]
			add(j)
			add(strings.ReplaceAll(j, "/", `\/`))
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// lowerHex is s with the hex digits of its percent escapes in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if 'A' <= b[j] && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
		}
	}
	return string(b)
}

// OAuth's credential parameters with their values, as a form or query
// holds them (name=value) and as JSON does ("name":"value"), and the
// credentials of a Basic or Bearer authorization.
var (
	credentialFormParam = regexp.MustCompile(`(?i)\b((?:access_|refresh_|id_)?token|client_secret|code_verifier|client_assertion)=[^&\s"'<>;,]+`)
	credentialJSONParam = regexp.MustCompile(`(?i)("(?:(?:access_|refresh_|id_)?token|client_secret|code_verifier|client_assertion)"\s*:\s*")(?:[^"\\]|\\.)*"`)
	credentialAuth      = regexp.MustCompile(`\b(Basic|Bearer) +[A-Za-z0-9._~+/-]{16,}=*`)
)

// RedactParams replaces in s the values of OAuth's credential
// parameters (access_token, refresh_token, id_token, token,
// client_secret, code_verifier, client_assertion) written as a form or
// JSON writes them, and the credentials of a Basic or Bearer
// authorization: what an authorization server's echo of a request holds.
// It is for text whose secret values are not at hand (the OAuth client
// redacts those by value): a record or log line built from an error.
func RedactParams(s string) string {
	s = credentialFormParam.ReplaceAllString(s, "${1}=[redacted]")
	s = credentialJSONParam.ReplaceAllString(s, `${1}[redacted]"`)
	return credentialAuth.ReplaceAllString(s, "${1} [redacted]")
}

// RedactSecrets replaces in s every value (in each form an echo may
// hold it, see secretForms) and every OAuth credential found by its
// shape (RedactParams): for text that reaches a person or the
// store from code that holds the values, such as a grant's.
func RedactSecrets(s string, values ...string) string {
	return RedactParams(redact(s, secretForms(values...)))
}

// redact replaces every secret value in s.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

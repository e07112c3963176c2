package discovery

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Redaction: the values that must never be shown (a server's env and
// header values, the tokens sent to it), and taking them out of text.

// secrets returns the values that must never be shown: env and header
// values, and the access tokens handed out so far (once a verification
// has wrapped Token in its tokenRecorder).
func (t Target) secrets() []string {
	var out []string
	for _, m := range []map[string]string{t.Env, t.Headers} {
		for _, v := range m {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	if rec, ok := t.Token.(*tokenRecorder); ok {
		for _, v := range rec.handedOut() {
			if len(v) >= 4 {
				out = append(out, v)
			}
		}
	}
	return out
}

// Redactor returns a function that replaces in a text every secret
// value of the target (its env and header values, the access tokens
// handed out so far) and every one of also (values shorter than 4 bytes
// are left, as everywhere), as errors and stderr tails are redacted.
func (t Target) Redactor(also ...string) func(string) string {
	secrets := t.secrets()
	for _, v := range also {
		if len(v) >= 4 {
			secrets = append(secrets, v)
		}
	}
	return func(s string) string { return redact(s, secrets) }
}

// redact replaces every secret value in s.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// longest returns the length of the longest secret.
func longest(secrets []string) int {
	n := 0
	for _, v := range secrets {
		n = max(n, len(v))
	}
	return n
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

// RedactOAuthParams replaces in s the values of OAuth's credential
// parameters (access_token, refresh_token, id_token, token,
// client_secret, code_verifier, client_assertion) written as a form or
// JSON writes them, and the credentials of a Basic or Bearer
// authorization: what an authorization server's echo of a request holds.
// It is for text whose secret values are not at hand (the OAuth client
// redacts those by value): a record or log line built from an error.
func RedactOAuthParams(s string) string {
	s = credentialFormParam.ReplaceAllString(s, "${1}=[redacted]")
	s = credentialJSONParam.ReplaceAllString(s, `${1}[redacted]"`)
	return credentialAuth.ReplaceAllString(s, "${1} [redacted]")
}

// RedactSecrets replaces in s every value (in each form an echo may
// hold it, see secretForms) and every OAuth credential found by its
// shape (RedactOAuthParams): for text that reaches a person or the
// store from code that holds the values, such as a grant's.
func RedactSecrets(s string, values ...string) string {
	return RedactOAuthParams(redact(s, secretForms(values...)))
}

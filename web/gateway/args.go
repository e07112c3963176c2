package gateway

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
)

// A hash alone tells a person nothing of what a call asked for, so a
// server can have its calls' arguments kept in the call log
// (store.Server.RecordArgs, off by default). What is kept is redacted
// twice over: the value of every key that looks like it names a secret
// (a token, a password, an API key, a cookie…) whatever it holds, and the
// server's own secret values (env, headers, sign-in client secret)
// wherever they appear, keys included; then it is cut at
// store.MaxCallArguments bytes, saying so. The arguments are never logged.

// redactedValue stands for a value taken out of recorded arguments.
const redactedValue = "[redacted]"

// secretKeyParts are what a key names a secret by, found anywhere in its
// letters and digits (lower-cased, without separators: "api_key",
// "apiKey" and "API-KEY" are all "apikey").
var secretKeyParts = []string{"token", "password", "passwd", "passphrase", "secret", "authorization",
	"cookie", "credential", "privatekey", "apikey", "sessionid", "bearer"}

// secretKeyEnds are what a key names a secret by at its end ("key",
// "sshKey", "x-auth", "db_pass"), where inside a word they mean
// something else ("keyword", "author").
var secretKeyEnds = []string{"key", "auth", "pass", "pwd"}

// secretKey reports whether an argument named k holds a secret.
func secretKey(k string) bool {
	norm := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(k))
	for _, p := range secretKeyParts {
		if strings.Contains(norm, p) {
			return true
		}
	}
	for _, p := range secretKeyEnds {
		if strings.HasSuffix(norm, p) {
			return true
		}
	}
	return false
}

// recordedArgs is a call's arguments as the call log keeps them: JSON,
// with the values of secret-looking keys replaced and what redact
// replaces taken out of every key and value, cut at
// store.MaxCallArguments bytes (truncated then says so).
func recordedArgs(args any, redact func(string) string) (text string, truncated bool) {
	b, err := json.Marshal(args)
	if err != nil {
		return "(arguments that cannot be recorded)", false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // numbers kept as sent
	var v any
	if err := dec.Decode(&v); err != nil {
		return "(arguments that cannot be recorded)", false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // shown escaped by the page, encoded again by the API
	if err := enc.Encode(redactArgs(v, redact)); err != nil {
		return "(arguments that cannot be recorded)", false
	}
	text = redact(strings.TrimSuffix(buf.String(), "\n"))
	if len(text) > store.MaxCallArguments {
		return strings.ToValidUTF8(text[:store.MaxCallArguments], ""), true
	}
	return text, false
}

// redactArgs returns v (decoded JSON) with the values of secret-looking
// keys replaced, and every key, string and number passed through redact.
func redactArgs(v any, redact func(string) string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if secretKey(k) {
				out[redact(k)] = redactedValue
			} else {
				out[redact(k)] = redactArgs(x, redact)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactArgs(x, redact)
		}
		return out
	case string:
		return redact(v)
	case json.Number:
		if redact(v.String()) != v.String() {
			return redactedValue
		}
	}
	return v
}

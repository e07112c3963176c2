package discovery

import "strings"

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

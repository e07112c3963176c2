package discovery

import "testing"

func TestRedact(t *testing.T) {
	target := Target{Env: map[string]string{"K": "hunter22", "SHORT": "ab"}, Headers: map[string]string{"Authorization": "Bearer tok-1234"}}
	got := redact("pw hunter22, auth Bearer tok-1234, ab", target.secrets())
	if got != "pw [redacted], auth [redacted], ab" {
		t.Errorf("redact = %q", got)
	}
}

package discovery

import "testing"

func TestRedact(t *testing.T) {
	target := Target{Env: map[string]string{"K": "hunter22", "SHORT": "ab"}, Headers: map[string]string{"Authorization": "Bearer tok-1234"}}
	got := redact("pw hunter22, auth Bearer tok-1234, ab", target.secrets())
	if got != "pw [redacted], auth [redacted], ab" {
		t.Errorf("redact = %q", got)
	}
}

func TestTargetRedactor(t *testing.T) {
	target := Target{Env: map[string]string{"K": "hunter22"}, Headers: map[string]string{"X-Key": "hdr-5678"}}
	for _, tc := range []struct {
		name, in string
		also     []string
		want     string
	}{
		{"the target's own values", "hunter22 and hdr-5678", nil, "[redacted] and [redacted]"},
		{"and the ones given", "oauth-secret-9 hunter22", []string{"oauth-secret-9"}, "[redacted] [redacted]"},
		{"empty and short ones left", "abc stays", []string{"", "abc"}, "abc stays"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := target.Redactor(tc.also...)(tc.in); got != tc.want {
				t.Errorf("Redactor(%q)(%q) = %q; want %q", tc.also, tc.in, got, tc.want)
			}
		})
	}
}

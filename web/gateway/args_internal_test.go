package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/discovery"
	"github.com/switchboard-dev/switchboard/store"
)

func TestSecretKey(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"token", true}, {"access_token", true}, {"refreshToken", true}, {"password", true}, {"DB_PASSWD", true},
		{"client-secret", true}, {"Authorization", true}, {"Cookie", true}, {"set-cookie", true}, {"credentials", true},
		{"api_key", true}, {"apiKey", true}, {"API-KEY", true}, {"key", true}, {"sshKey", true}, {"private_key_pem", true},
		{"x-auth", true}, {"db_pass", true}, {"pwd", true}, {"sessionId", true}, {"bearer", true},
		{"path", false}, {"query", false}, {"keyword", false}, {"keys", false}, {"author", false}, {"passage", false},
		{"tokenizer_name", true}, // over-redacting is the safe side
		{"", false},
	} {
		if got := secretKey(tc.key); got != tc.want {
			t.Errorf("secretKey(%q) = %v; want %v", tc.key, got, tc.want)
		}
	}
}

func TestRecordedArgs(t *testing.T) {
	target := discovery.Target{Env: map[string]string{"API_TOKEN": "env-secret-42"}, Headers: map[string]string{"X-Api": "hdr-secret-7"}}
	redact := target.Redactor("oauth-secret-9", "")
	for _, tc := range []struct {
		name string
		args any
		want string
	}{
		{"nothing", nil, "null"},
		{"plain arguments as sent, keys sorted, numbers exact", map[string]any{"q": "<b>x</b> & y", "n": json.Number("12345678901234567890"), "ok": true},
			`{"n":12345678901234567890,"ok":true,"q":"<b>x</b> & y"}`},
		{"secret-looking keys, at any depth, whatever their value", map[string]any{"token": "t-1", "nested": []any{map[string]any{"api_key": map[string]any{"a": 1}, "path": "/tmp"}}},
			`{"nested":[{"api_key":"[redacted]","path":"/tmp"}],"token":"[redacted]"}`},
		{"the server's own secret values, wherever they are", map[string]any{"note": "use env-secret-42 then hdr-secret-7", "hdr-secret-7": "oauth-secret-9"},
			`{"[redacted]":"[redacted]","note":"use [redacted] then [redacted]"}`},
		{"a secret value sent as a number", map[string]any{"pin": json.Number("0"), "code": 123456789}, `{"code":123456789,"pin":0}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, truncated := recordedArgs(tc.args, redact)
			if got != tc.want || truncated {
				t.Errorf("recordedArgs(%v) = %s, %v; want %s, false", tc.args, got, truncated, tc.want)
			}
		})
	}

	t.Run("a numeric secret", func(t *testing.T) {
		got, _ := recordedArgs(map[string]any{"n": 98765432}, discovery.Target{Env: map[string]string{"PIN": "98765432"}}.Redactor())
		if got != `{"n":"[redacted]"}` {
			t.Errorf("recordedArgs = %s; want the number redacted", got)
		}
	})

	t.Run("capped, on a character boundary, and saying so", func(t *testing.T) {
		args := map[string]any{"text": strings.Repeat("é", store.MaxCallArguments), "token": "env-secret-42"}
		got, truncated := recordedArgs(args, redact)
		if !truncated || len(got) > store.MaxCallArguments || len(got) < store.MaxCallArguments-3 || !utf8.ValidString(got) {
			t.Errorf("recordedArgs(8 KiB) = %d bytes, valid UTF-8 %v, truncated %v; want at most %d, valid, truncated",
				len(got), utf8.ValidString(got), truncated, store.MaxCallArguments)
		}
		if strings.Contains(got, "env-secret-42") {
			t.Error("a capped record holds a secret")
		}
	})

	t.Run("arguments that are not JSON", func(t *testing.T) {
		if got, _ := recordedArgs(map[string]any{"f": func() {}}, redact); got != "(arguments that cannot be recorded)" {
			t.Errorf("recordedArgs(a func) = %s", got)
		}
	})
}

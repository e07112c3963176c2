package oauth

import "testing"

// A secret comes back from an echo of a request in whatever encoding the
// echo chose; each is redacted whole.
func TestSecretForms(t *testing.T) {
	const secret = `a/b+c="d"&e <f>`
	forms := secretForms(secret, "abc", "")
	for _, tc := range []struct{ name, in string }{
		{"as sent", secret},
		{"form-encoded", `a%2Fb%2Bc%3D%22d%22%26e+%3Cf%3E`},
		{"form-encoded, lower-case hex", `a%2fb%2bc%3d%22d%22%26e+%3cf%3e`},
		{"path-encoded", `a%2Fb+c=%22d%22&e%20%3Cf%3E`},
		{"JSON", `a/b+c=\"d\"&e <f>`},
		{"JSON with HTML escapes", `a/b+c=\"d\"\u0026e \u003cf\u003e`},
		{"JSON with an escaped solidus", `a\/b+c=\"d\"&e <f>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := "x=" + tc.in + ";"
			if got := redact(in, forms); got != "x=[redacted];" {
				t.Errorf("redact(%q, secretForms(%q)) = %q; want x=[redacted];", in, secret, got)
			}
		})
	}
	if got := redact("abc", forms); got != "abc" {
		t.Errorf("redact(abc) = %q; want a value under 4 bytes left", got)
	}
}

func TestRedactParams(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"form", "grant_type=refresh_token&refresh_token=rt-1%2F2&client_secret=s3&client_id=c",
			"grant_type=refresh_token&refresh_token=[redacted]&client_secret=[redacted]&client_id=c"},
		{"revocation and verifier", "token=tok-1&code_verifier=v_v-1", "token=[redacted]&code_verifier=[redacted]"},
		{"JSON", `{"access_token":"at\"1","Client_Secret" : "s/3","scope":"mcp"}`,
			`{"access_token":"[redacted]","Client_Secret" : "[redacted]","scope":"mcp"}`},
		{"authorization", "authorization Basic ZWNobzpzM2NyZXQtdmFsdWU=; Bearer eyJhbGciOiJSUzI1NiJ9.x",
			"authorization Basic [redacted]; Bearer [redacted]"},
		{"words left", "the server answered no Bearer access token; exited with code=1, tokens=3",
			"the server answered no Bearer access token; exited with code=1, tokens=3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RedactParams(tc.in); got != tc.want {
				t.Errorf("RedactParams(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
}

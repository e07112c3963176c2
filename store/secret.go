package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Secrets at rest. Every secret a store keeps (env and header values, a
// server's OAuth client secret, grants' tokens and client secrets, the
// MCP token) is kept sealed: encrypted with an authenticated cipher under
// a key kept apart from the store (internal/secretkey), with where the
// value lives (its record's key and field, see the *AD functions) as
// associated data, so that a sealed value moved to another record does
// not open. store/sealed seals what goes in and opens what comes out; the
// backends keep sealed values as opaque strings.
//
// A sealed value is
//
//	"\x00sealed:v1:" key id ":" SHA-256 of the value (hex) ":" base64url(nonce ‖ ciphertext)
//
// The leading NUL keeps it apart from any value a person can enter (no
// environment variable or header holds one). It carries the SHA-256 of
// the value (bound into the ciphertext's associated data) because the
// store hashes configurations with each secret's SHA-256 (ConfigHash,
// LaunchOf), which must not change when a value is sealed again under a
// fresh nonce or another key. That hash is what the store kept before
// secrets were sealed too, in confirmed launches; see ValueHash.

// SealedPrefix starts every sealed value.
const SealedPrefix = "\x00sealed:v1:"

// Sealer seals secret values and opens them again (internal/secretkey's
// Ring is the one Switchboard uses).
type Sealer interface {
	// Seal seals value, kept where ad says.
	Seal(ad, value string) (string, error)
	// Open opens a sealed value kept where ad says; an error says why it
	// does not open (another key, another place, damage).
	Open(ad, sealed string) (string, error)
	// Current reports whether sealed is sealed under the key Seal uses.
	Current(sealed string) bool
}

// sealedMark starts every sealed value, of any version.
const sealedMark = "\x00sealed:"

// IsSealed reports whether v is a sealed value (see above), of this
// version or not, whole or damaged: nothing else starts as one does, so
// such a value is never taken for a secret in clear (SealedParts says
// whether it can be read).
func IsSealed(v string) bool { return strings.HasPrefix(v, sealedMark) }

// SealedParts splits a sealed value into its key id, the value's hash and
// the encoded nonce and ciphertext; ok is false if v is not one.
func SealedParts(v string) (keyID, hash, box string, ok bool) {
	rest, found := strings.CutPrefix(v, SealedPrefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 || len(parts[1]) != sha256.Size*2 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// ValueHash is the SHA-256 (hex) of a secret value, as Launch and
// ConfigHash keep it; of a sealed value, the hash of the value it holds.
func ValueHash(v string) string {
	if _, h, _, ok := SealedParts(v); ok {
		return h
	}
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])
}

// Where secrets are kept, as sealing binds them (associated data).

// EnvAD is where server id's env variable name is kept.
func EnvAD(id, name string) string { return "server/" + id + "/env/" + name }

// HeaderAD is where server id's header name is kept.
func HeaderAD(id, name string) string { return "server/" + id + "/header/" + name }

// OAuthClientSecretAD is where server id's OAuth client secret is kept.
func OAuthClientSecretAD(id string) string { return "server/" + id + "/oauth/client_secret" }

// GrantAD is where field (access_token, refresh_token, client_secret) of
// server id's grant from issuer is kept.
func GrantAD(id, issuer, field string) string { return "grant/" + id + "/" + issuer + "/" + field }

// MCPTokenAD is where the MCP endpoint's token is kept.
const MCPTokenAD = "mcp_token"

// SecretValues is every secret value d holds, sealed or in clear.
func (d *Dump) SecretValues() []string {
	var out []string
	add := func(vs ...string) {
		for _, v := range vs {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	for _, s := range d.Servers {
		for _, v := range s.Server.Env {
			add(v)
		}
		for _, v := range s.Server.Headers {
			add(v)
		}
		add(s.Server.OAuthSettings().ClientSecret)
		for _, g := range s.Grants {
			add(g.AccessToken, g.RefreshToken, g.ClientSecret)
		}
	}
	add(d.MCPToken)
	return out
}

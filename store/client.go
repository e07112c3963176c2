package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// ClientToken is the MCP token of one agent client a person connected
// (its own, so it can be revoked alone and its calls are named in the
// call log). The store keeps its hash, never the token.
type ClientToken struct {
	ID   string `json:"id"`   // random, short; names it in URLs
	Name string `json:"name"` // the client, as the person knows it: "Claude Desktop"
	Hash string `json:"hash"` // see HashToken
	// Profile is the id of the profile whose view the client is offered;
	// empty for DefaultProfile.
	Profile   string    `json:"profile,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// NewClientToken makes a token for the client named name: the token to
// hand out once, and what the store keeps of it.
func NewClientToken(name string, now time.Time) (token string, ct ClientToken) {
	b := make([]byte, 32)
	rand.Read(b)
	token = "sbc_" + hex.EncodeToString(b)
	id := make([]byte, 6)
	rand.Read(id)
	return token, ClientToken{ID: hex.EncodeToString(id), Name: name, Hash: HashToken(token), CreatedAt: now.UTC()}
}

// HashToken is the SHA-256 of a token, in hex: what is kept and compared.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

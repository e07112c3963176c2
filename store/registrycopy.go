package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// A registry's copy: the servers an MCP Registry (the official one, or a
// private one that speaks its API) lists, pulled in the background and
// kept, so that browsing it is a read of the store, works while the
// registry cannot be reached, and does not call the registry per page
// view (it asks aggregators to pull). A copy is a cache: dumps, backups'
// comparisons and migrations leave it out; the next pull makes it again.

// RegistryEntry is one version of one server in a registry's copy.
type RegistryEntry struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Latest, Status ("active", "deprecated", "deleted") and UpdatedAt
	// are the registry's own metadata of the version.
	Latest    bool      `json:"latest"`
	Status    string    `json:"status"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Server is the server.json as the registry sent it (bounded and
	// checked when pulled; hostile input wherever it is shown).
	Server json.RawMessage `json:"server"`
}

// RegistryPull is what the last pull of a registry did.
type RegistryPull struct {
	// At is when the copy was last brought up to date (zero: never).
	At time.Time `json:"at,omitzero"`
	// Full says a whole pull completed once: the copy holds every entry
	// the registry had then (a browse before it reads through).
	Full bool `json:"full"`
	// Entries is how many versions the copy holds.
	Entries int `json:"entries"`
	// TriedAt and Error are the last pull that failed, if the last did.
	TriedAt time.Time `json:"tried_at,omitzero"`
	Error   string    `json:"error,omitempty"`
}

// RegistryCopies keeps the copies of registries, each under its URL.
type RegistryCopies interface {
	// PutRegistryEntries keeps entries in the registry's copy, each
	// replacing the version of the same name kept, and records pull as
	// the copy's last pull (its Entries counted here).
	PutRegistryEntries(ctx context.Context, registry string, entries []RegistryEntry, pull RegistryPull) error
	// RegistryCopy reads a registry's whole copy, by name then version,
	// and its last pull (zero if it was never pulled).
	RegistryCopy(ctx context.Context, registry string) ([]RegistryEntry, RegistryPull, error)
}

// RegistryKey is the short name a registry's copy is kept under: of its
// URL, so that any URL is a key.
func RegistryKey(registry string) string {
	sum := sha256.Sum256([]byte(registry))
	return hex.EncodeToString(sum[:8])
}

// RegistryEntryKey is the key of an entry within its copy.
func RegistryEntryKey(name, version string) string { return name + "@" + version }

package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The audit log of tool calls routed through the MCP endpoint, and the
// endpoint's token. Neither is part of the catalog: writing them does not
// advance Revision, so a busy agent never invalidates catalog caches.

var (
	// bucketAudit holds call records by sequence (big-endian uint64).
	bucketAudit = []byte("audit")
	keyMCPToken = []byte("mcp_token")
)

// MaxCalls is how many call records are kept; older ones are dropped.
const MaxCalls = 10000

// Call decisions.
const (
	DecisionAllowed  = "allowed"  // allow policy
	DecisionApproved = "approved" // ask policy, a person approved
	DecisionDenied   = "denied"   // refused before reaching the server
)

// Call is one tool call routed to an upstream server, or refused.
type Call struct {
	Seq uint64    `json:"seq"`
	At  time.Time `json:"at"`
	// Session is the agent's MCP session id ("dashboard" for Try it).
	Session   string `json:"session"`
	Client    string `json:"client,omitempty"` // clientInfo name and version
	ServerID  string `json:"server_id"`
	Tool      string `json:"tool"`
	AgentName string `json:"agent_name"`
	// ArgsHash is the SHA-256 of the arguments as received.
	ArgsHash string `json:"args_hash"`
	Pin      string `json:"pin,omitempty"`
	Policy   string `json:"policy,omitempty"`
	Decision string `json:"decision"`
	// DecidedBy says who let the call through or refused it: "policy",
	// "dashboard" (a person), "timeout", "pin check".
	DecidedBy  string `json:"decided_by"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Outcome is "ok", "tool_error" (the tool said isError), "error"
	// (the call failed), or "refused".
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// AppendCalls records calls in one transaction, giving each its
// sequence, and drops the oldest beyond MaxCalls.
func (db *DB) AppendCalls(calls []Call) error {
	if len(calls) == 0 {
		return nil
	}
	return db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		for i := range calls {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			calls[i].Seq = seq
			if err := putJSON(b, seqKey(seq), calls[i]); err != nil {
				return err
			}
		}
		// Sequences are contiguous from the oldest kept to the newest.
		c := b.Cursor()
		for k, _ := c.First(); k != nil && b.Sequence()-binary.BigEndian.Uint64(k)+1 > MaxCalls; k, _ = c.First() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// Calls returns up to limit call records, newest first, and how many are
// kept in all.
func (db *DB) Calls(limit int) ([]Call, int, error) {
	out := []Call{}
	total := 0
	err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketAudit)
		c := b.Cursor()
		if k, _ := c.First(); k != nil {
			total = int(b.Sequence() - binary.BigEndian.Uint64(k) + 1)
		}
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			var call Call
			if err := json.Unmarshal(v, &call); err != nil {
				return fmt.Errorf("decode call %x: %w", k, err)
			}
			out = append(out, call)
		}
		return nil
	})
	return out, total, err
}

// MCPToken returns the MCP endpoint's bearer token, creating a random one
// the first time, so agents keep working across restarts.
func (db *DB) MCPToken() (string, error) {
	var token string
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if v := meta.Get(keyMCPToken); v != nil {
			token = string(v)
			return nil
		}
		token = newToken()
		return meta.Put(keyMCPToken, []byte(token))
	})
	return token, err
}

// RotateMCPToken replaces the MCP endpoint's token with a new random one
// and returns it.
func (db *DB) RotateMCPToken() (string, error) {
	token := newToken()
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyMCPToken, []byte(token))
	})
	return token, err
}

func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return "sbmcp_" + hex.EncodeToString(b)
}

package store

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Role is what a person may do on the dashboard and through the API.
type Role string

// The roles, each allowed what the one before it is.
const (
	// RoleViewer reads everything a page or the API shows; changes
	// nothing.
	RoleViewer Role = "viewer"
	// RoleApprover also answers approvals, sets policies and presets,
	// approves changes, confirms launches and verifies; it does not add,
	// edit or delete servers, nor manage people, tokens or profiles.
	RoleApprover Role = "approver"
	// RoleAdmin may do everything.
	RoleAdmin Role = "admin"
)

// Roles lists the roles, least first.
var Roles = []Role{RoleViewer, RoleApprover, RoleAdmin}

// rank orders the roles; an unknown role ranks below every known one.
func (r Role) rank() int {
	for i, k := range Roles {
		if r == k {
			return i + 1
		}
	}
	return 0
}

// Allows reports whether r may do what needs role need.
func (r Role) Allows(need Role) bool { return r.rank() > 0 && r.rank() >= need.rank() }

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// User is a person of a team's Switchboard: who signs in (with the
// company's identity provider, or a personal token) and what they may do.
// The store keeps the hash of the personal API token, never the token.
type User struct {
	ID    string `json:"id"`    // random, short; names the person in URLs
	Email string `json:"email"` // lower case; names the person in every record
	Role  Role   `json:"role"`
	// TokenHash is HashToken of the personal API token ("" if none:
	// revoked, or never made).
	TokenHash string    `json:"token_hash,omitempty"`
	TokenMade time.Time `json:"token_made,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by,omitempty"`
	// LastSignIn is the last sign-in through the identity provider.
	LastSignIn time.Time `json:"last_sign_in,omitzero"`
}

// NormalEmail is email as the store keeps it: trimmed, lower case.
func NormalEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// ErrUserExists refuses a second person with an email already kept.
var ErrUserExists = errors.New("store: a person with this email exists")

// ErrNotFirst refuses a first person (CreateFirstUser) to a store that
// has people already.
var ErrNotFirst = errors.New("store: this Switchboard has people already")

// People keeps a team's people. They are not changes of the catalog.
type People interface {
	// CreateUser keeps a new person; ErrUserExists if the email (or id)
	// is taken.
	CreateUser(ctx context.Context, u User) error
	// CreateFirstUser keeps u only if there is nobody yet (ErrNotFirst
	// otherwise), in one transaction: of two people signing in at once
	// on a fresh deployment, on two replicas, one is its first.
	CreateFirstUser(ctx context.Context, u User) error
	// Users lists the people, oldest first.
	Users(ctx context.Context) ([]User, error)
	// UpdateUser changes the person of id by fn (its ID, Email and
	// CreatedAt stay); ErrNotFound if there is none.
	UpdateUser(ctx context.Context, id string, fn func(*User) error) (User, error)
	// DeleteUser forgets a person; ErrNotFound if there is none.
	DeleteUser(ctx context.Context, id string) error
}

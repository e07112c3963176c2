package store

import (
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Grant is what a server's OAuth sign-in left: the client one
// authorization server (Issuer) knows, and the tokens it issued for the
// server. AccessToken, RefreshToken and ClientSecret are secrets: a
// Grant is never part of a Summary, so it reaches no page, API answer,
// event or export; only the code that calls the server reads it.
type Grant struct {
	Issuer        string    `json:"issuer"`
	TokenEndpoint string    `json:"token_endpoint"`
	Revocation    string    `json:"revocation_endpoint,omitempty"`
	Resource      string    `json:"resource"`
	ClientID      string    `json:"client_id"`
	ClientSecret  string    `json:"client_secret,omitempty"`
	AuthMethod    string    `json:"token_endpoint_auth_method"`
	Scope         string    `json:"scope,omitempty"`
	AccessToken   string    `json:"access_token"`
	RefreshToken  string    `json:"refresh_token,omitempty"`
	ExpiresAt     time.Time `json:"expires_at,omitzero"`
	// RedirectURI is where the sign-in sent the browser back: a client
	// registered for it serves the next sign-in at the same issuer.
	RedirectURI string `json:"redirect_uri,omitempty"`
	// Problem is set when the authorization server refused a refresh in
	// a way no retry mends (the grant was revoked, say): the person must
	// sign in again. ProblemAt is when.
	Problem   string    `json:"problem,omitempty"`
	ProblemAt time.Time `json:"problem_at,omitzero"`
	// SavedAt is when the grant was signed in to, or last refreshed.
	SavedAt time.Time `json:"saved_at"`
}

// SaveGrant keeps g for the server, under its issuer: a sign-in at
// another authorization server (the server moved to one) does not
// overwrite what the first issued, and is never mixed with it. It
// returns ErrNotFound if there is no such server.
func (db *DB) SaveGrant(id string, g Grant) error {
	return db.update(Change{ServerID: id}, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return ErrNotFound
		}
		b, err := tx.Bucket(bucketGrants).CreateBucketIfNotExists([]byte(id))
		if err != nil {
			return err
		}
		return putJSON(b, []byte(g.Issuer), g)
	})
}

// Grant returns the server's grant from issuer; ok is false if there is
// none.
func (db *DB) Grant(id, issuer string) (g Grant, ok bool, err error) {
	err = db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGrants).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		err := getJSON(b, []byte(issuer), &g)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		ok = err == nil
		return err
	})
	return g, ok, err
}

// LatestGrant returns the grant the server was last signed in to (or
// refreshed) with; ok is false if there is none.
func (db *DB) LatestGrant(id string) (g Grant, ok bool, err error) {
	err = db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketGrants).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			var each Grant
			if err := getJSON(b, k, &each); err != nil {
				return err
			}
			if !ok || each.SavedAt.After(g.SavedAt) {
				g, ok = each, true
			}
			return nil
		})
	})
	return g, ok, err
}

// DeleteGrants forgets every grant of the server (a sign-out). Deleting
// the server deletes them too. It returns ErrNotFound if there is no
// such server.
func (db *DB) DeleteGrants(id string) error {
	return db.update(Change{ServerID: id}, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketServers).Get([]byte(id)) == nil {
			return ErrNotFound
		}
		return deleteServerBucket(tx, bucketGrants, []byte(id))
	})
}

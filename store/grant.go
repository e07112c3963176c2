package store

import (
	"time"
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
	// SignedInBy names the person who signed in (an email, or
	// "dashboard" for the shared token's holder), SignedInAt when; a
	// refresh keeps both.
	SignedInBy string    `json:"signed_in_by,omitempty"`
	SignedInAt time.Time `json:"signed_in_at,omitzero"`
}

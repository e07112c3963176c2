package gateway

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/store"
)

// Each client a person connects gets its own MCP token: shown once, kept
// by hash, revocable alone, and named in the call log (store.Call's
// ConnectedAs). The endpoint's own token (Token) keeps working for what
// was set up with it.

// maxClientName caps a connected client's name.
const maxClientName = 100

// ErrClientName is Connect's refusal of an empty or overlong name.
var ErrClientName = errors.New("a connected client needs a name of 1 to 100 characters")

// ErrClientProfile is Connect's refusal of a profile there is none of.
var ErrClientProfile = errors.New("there is no such profile")

// ConnectField is the input field a refusal of Connect is about ("name"
// or "profile"), or "" for any other error.
func ConnectField(err error) string {
	switch {
	case errors.Is(err, ErrClientName):
		return "name"
	case errors.Is(err, ErrClientProfile):
		return "profile"
	}
	return ""
}

// Connect makes a token for the client named name, of the profile with
// the id given ("" or store.DefaultProfile for the default), on behalf of
// by, and keeps its hash: the token is returned once, never again.
func (e *Endpoint) Connect(ctx context.Context, name, profile, by string) (string, store.ClientToken, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > maxClientName || !utf8.ValidString(name) {
		return "", store.ClientToken{}, ErrClientName
	}
	token, ct := store.NewClientToken(name, time.Now())
	ct.CreatedBy = by
	if profile != store.DefaultProfile {
		ct.Profile = profile
	}
	if err := e.st.AddClientToken(ctx, ct); errors.Is(err, store.ErrProfileNotFound) {
		return "", store.ClientToken{}, ErrClientProfile
	} else if err != nil {
		return "", store.ClientToken{}, err
	}
	e.log.Info("a connected client's token made", "client", name, "id", ct.ID, "profile", cmp.Or(ct.Profile, store.DefaultProfile), "by", by)
	return token, ct, e.loadClients(ctx)
}

// Disconnect revokes a connected client's token (store.ErrNotFound if
// none has the id): its next request is refused.
func (e *Endpoint) Disconnect(ctx context.Context, id string) error {
	if err := e.st.RevokeClientToken(ctx, id); err != nil {
		return err
	}
	e.sessions.forgetToken(id)
	return e.loadClients(ctx)
}

// DisconnectToken revokes the connected client whose token this is, if
// one is (nothing else: the endpoint's own token is not a client's).
func (e *Endpoint) DisconnectToken(ctx context.Context, token string) error {
	ct, ok := e.clientOf(token)
	if !ok {
		return nil
	}
	err := e.Disconnect(ctx, ct.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // revoked meanwhile
	}
	return err
}

// Clients is the connected clients, oldest first.
func (e *Endpoint) Clients(ctx context.Context) ([]store.ClientToken, error) {
	return e.st.ClientTokens(ctx)
}

// loadClients reads the connected clients' tokens for the bearer check.
func (e *Endpoint) loadClients(ctx context.Context) error {
	list, err := e.st.ClientTokens(ctx)
	if err != nil {
		return err
	}
	byHash := make(map[string]store.ClientToken, len(list))
	for _, ct := range list {
		byHash[ct.Hash] = ct
	}
	e.clients.Store(&byHash)
	return nil
}

// clientOf is the connected client whose token this is (ok false if
// none): the lookup is by the token's hash.
func (e *Endpoint) clientOf(token string) (store.ClientToken, bool) {
	m := e.clients.Load()
	if m == nil || !strings.HasPrefix(token, "sbc_") {
		return store.ClientToken{}, false
	}
	ct, ok := (*m)[store.HashToken(token)]
	return ct, ok
}

type connectionKey struct{}

// connectedAs is the name of the connected client whose token made the
// request in ctx ("" for the endpoint's own token).
func connectedAs(ctx context.Context) string {
	ct, _ := connectedClient(ctx)
	return ct.Name
}

// ErrClientApprovals is SetClientApprovals' refusal of an unknown
// setting.
var ErrClientApprovals = errors.New(`approvals must be "client", "dashboard" or "" (the profile's)`)

// SetClientApprovals sets where the connected client's calls to ask
// tools may be answered (store.ClientToken.Approvals): store.ErrNotFound
// if no client has the id.
func (e *Endpoint) SetClientApprovals(ctx context.Context, id, approvals string) (store.ClientToken, error) {
	if !store.ValidApprovals(approvals) {
		return store.ClientToken{}, ErrClientApprovals
	}
	ct, err := e.st.UpdateClientToken(ctx, id, func(ct *store.ClientToken) error {
		ct.Approvals = approvals
		return nil
	})
	if err != nil {
		return ct, err
	}
	return ct, e.loadClients(ctx)
}

// Disallow forgets that the connected client always allows the tool (an
// Always allow its person answered in it): its next call asks again.
// store.ErrNotFound if no client has the id, or it does not allow it.
func (e *Endpoint) Disallow(ctx context.Context, id string, ref store.ToolRef) error {
	_, err := e.st.UpdateClientToken(ctx, id, func(ct *store.ClientToken) error {
		if !ct.Disallow(ref) {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return err
	}
	return e.loadClients(ctx)
}

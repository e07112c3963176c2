package serverconfig

import (
	"maps"
	"slices"
	"strconv"

	"github.com/switchboard-dev/switchboard/store"
)

// JSON is a server's settings as the JSON API takes them and gives them
// back (docs/architecture.md "Web, API and CLI"): secret values come back masked,
// and a masked value sent back keeps the stored one.
type JSON struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	Transport     string            `json:"transport"`
	Command       string            `json:"command,omitempty"`
	Args          []string          `json:"args,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Cwd           string            `json:"cwd,omitempty"`
	URL           string            `json:"url,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	TimeoutMS     int               `json:"timeout_ms,omitempty"`
	MemoryMB      int               `json:"memory_mb,omitempty"`
	TTLSeconds    int               `json:"ttl_seconds,omitempty"`
	AutoRefresh   *bool             `json:"auto_refresh"`
	DefaultPolicy store.Policy      `json:"default_policy"`
	// Preset is chosen at the launch confirmation or set on its own
	// route; a server's settings never unset it.
	Preset  store.Preset `json:"preset,omitempty"`
	Enabled *bool        `json:"enabled,omitempty"`
	// OAuth is the sign-in client, its secret masked.
	OAuth *OAuthJSON `json:"oauth,omitempty"`
	// RecordArguments says whether the call log keeps the arguments of
	// the server's calls (redacted, capped); left out of a PUT, it stays
	// as it is (off for a new server).
	RecordArguments *bool `json:"record_arguments,omitempty"`
	// Sandbox is a stdio server's permission profile (see
	// discovery/sandbox.Profile): as it runs in an answer; left out of a
	// PUT, it stays as it is.
	Sandbox *store.Sandbox `json:"sandbox,omitempty"`
	// Asks is what the server may ask, during a call, of the agent that
	// made it, per kind (sampling, elicitation, roots): allow, ask or
	// deny. An answer names every kind; a PUT may name some, the others
	// staying as they are, or leave it out.
	Asks map[string]store.Policy `json:"asks,omitempty"`
}

// OAuthJSON is a remote server's sign-in client.
type OAuthJSON struct {
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// ToJSON is srv's settings as the API gives them, secrets masked.
func ToJSON(srv store.Server) JSON {
	enabled := srv.Enabled
	out := JSON{
		ID: srv.ID, Name: srv.Name, Transport: srv.Transport, Command: srv.Command, Args: srv.Args,
		Env: mask(srv.Env), Cwd: srv.Cwd, URL: MaskURL(srv.URL), Headers: mask(srv.Headers),
		TimeoutMS: srv.TimeoutMS, MemoryMB: srv.MemoryMB, TTLSeconds: srv.TTLSeconds, AutoRefresh: srv.AutoRefresh,
		DefaultPolicy: srv.DefaultPolicy, Preset: srv.Preset, Enabled: &enabled, RecordArguments: &srv.RecordArgs,
		Sandbox: Sandbox(srv), Asks: map[string]store.Policy{},
	}
	for _, kind := range store.AskKinds {
		out.Asks[kind] = srv.Asks.Of(kind)
	}
	if srv.OAuth != nil {
		out.OAuth = &OAuthJSON{ClientID: srv.OAuth.ClientID, Scopes: srv.OAuth.Scopes}
		if srv.OAuth.ClientSecret != "" {
			out.OAuth.ClientSecret = SecretMask
		}
	}
	return out
}

func mask(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k := range m {
		out[k] = SecretMask
	}
	return out
}

// Input is the settings as Validate reads them.
func (j JSON) Input() Input {
	in := Input{
		ID: j.ID, Name: j.Name, Transport: j.Transport, Command: j.Command, Args: j.Args,
		Cwd: j.Cwd, URL: j.URL, DefaultPolicy: string(j.DefaultPolicy), Enabled: j.Enabled == nil || *j.Enabled,
		RecordArgs: j.RecordArguments, Sandbox: j.Sandbox, Asks: j.Asks,
	}
	for _, n := range []struct {
		v   int
		out *string
	}{{j.TimeoutMS, &in.TimeoutMS}, {j.MemoryMB, &in.MemoryMB}, {j.TTLSeconds, &in.TTLSeconds}} {
		if n.v != 0 {
			*n.out = strconv.Itoa(n.v)
		}
	}
	in.AutoRefresh = OnOff(j.AutoRefresh)
	for _, k := range slices.Sorted(maps.Keys(j.Env)) {
		in.Env = append(in.Env, KV{Key: k, Value: j.Env[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(j.Headers)) {
		in.Headers = append(in.Headers, KV{Key: k, Value: j.Headers[k]})
	}
	if o := j.OAuth; o != nil {
		in.OAuthClientID, in.OAuthClientSecret, in.OAuthScopes = o.ClientID, o.ClientSecret, o.Scopes
	}
	return in
}

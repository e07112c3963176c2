package serverconfig

import (
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
)

var (
	IDPattern     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	envKeyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// headerKeyPattern is an HTTP token (RFC 9110).
	headerKeyPattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// SecretMask stands for a stored secret value in API answers; sending it
// back in a PUT keeps the stored value.
const SecretMask = "********"

// Input is a server as a person or program submitted it, before
// validation. Form and API both fill it.
type Input struct {
	ID        string
	Name      string
	Transport string
	Command   string
	Args      []string
	Env       []KV
	Cwd       string
	URL       string
	Headers   []KV
	TimeoutMS string // the API's, in milliseconds
	// TimeoutSeconds is the form's start timeout, in seconds (decimals
	// allowed); it wins over TimeoutMS.
	TimeoutSeconds string
	MemoryMB       string // MiB
	TTLSeconds     string
	AutoRefresh    string // "" (the default), "on" or "off"
	DefaultPolicy  string
	Enabled        bool
	// The sign-in client (remote servers); a secret left empty (or
	// masked) keeps the stored one.
	OAuthClientID     string
	OAuthClientSecret string
	OAuthScopes       []string
	// RecordArgs turns the recording of call arguments on or off; nil
	// keeps the stored setting (off for a new server). The form has no
	// field for it: the server page sets it on its own.
	RecordArgs *bool
	// Sandbox is a stdio server's permission profile; nil keeps the
	// stored one (the default for its command on a new server).
	// SandboxCPU and SandboxProcesses are the form's numbers as typed,
	// which win over the profile's when set.
	Sandbox                      *store.Sandbox
	SandboxCPU, SandboxProcesses string
	// Asks sets what the server may ask of the calling agents, by kind;
	// a kind left out keeps the stored policy (allow for a new server).
	Asks map[string]store.Policy
}

type KV struct{ Key, Value string }

// Bounds of a server's TTL, in seconds: from 10 s to a week.
const (
	minTTLSeconds = 10
	maxTTLSeconds = 7 * 24 * 3600
)

// Bounds of a server's memory cap, in MiB: below 16 hardly any server
// starts.
const (
	minMemoryMB = 16
	maxMemoryMB = 1 << 20
)

// Validate checks in and builds the server. old is the stored server when
// editing (nil when adding): secret values left empty or masked keep the
// stored value. The returned map has one message per invalid field.
func Validate(in Input, old *store.Server) (store.Server, map[string]string) {
	errs := map[string]string{}
	s := store.Server{
		ID:            strings.TrimSpace(in.ID),
		Name:          strings.TrimSpace(in.Name),
		Transport:     in.Transport,
		DefaultPolicy: store.Policy(in.DefaultPolicy),
		Enabled:       in.Enabled,
		RecordArgs:    old != nil && old.RecordArgs,
	}
	if in.RecordArgs != nil {
		s.RecordArgs = *in.RecordArgs
	}
	if old != nil {
		s.Asks, s.From = old.Asks, old.From
	}
	for _, kind := range slices.Sorted(maps.Keys(in.Asks)) {
		p := in.Asks[kind]
		switch {
		case !p.Valid():
			errs["asks."+kind] = fmt.Sprintf("What the server may ask (%s) must be allow, ask or deny.", kind)
		case !s.Asks.Set(kind, p):
			errs["asks."+kind] = fmt.Sprintf("%q is not something a server may ask: sampling, elicitation or roots.", kind)
		}
	}
	switch {
	case s.ID == "":
		errs["id"] = "Id is required."
	case !IDPattern.MatchString(s.ID):
		errs["id"] = "Id must be 1–32 characters: lower-case letters, digits and dashes, starting with a letter or digit."
	case s.ID == "new":
		// /servers/new is the add form: a server "new" could not be shown.
		errs["id"] = `Id "new" is reserved; choose another.`
	}
	if s.Name == "" {
		s.Name = s.ID
	}
	if len(s.Name) > 100 {
		errs["name"] = "Display name must be at most 100 characters."
	}
	if s.DefaultPolicy == "" {
		s.DefaultPolicy = store.PolicyAsk
	}
	if !s.DefaultPolicy.Valid() {
		errs["default_policy"] = "Default policy must be allow, ask or deny."
	}
	validateTimeout(in, &s, errs)
	if m := strings.TrimSpace(in.MemoryMB); m != "" {
		n, err := strconv.Atoi(m)
		switch {
		case err != nil || n < minMemoryMB || n > maxMemoryMB:
			errs["memory_mb"] = fmt.Sprintf("Memory cap must be a whole number of MiB from %d to %d, or empty for none.", minMemoryMB, maxMemoryMB)
		case s.Transport != store.TransportStdio:
			errs["memory_mb"] = "A memory cap applies to stdio servers only."
		}
		s.MemoryMB = n
	}
	if t := strings.TrimSpace(in.TTLSeconds); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < minTTLSeconds || n > maxTTLSeconds {
			errs["ttl_seconds"] = fmt.Sprintf("Fresh-for time must be a whole number of seconds from %d to %d, or empty for the global default.", minTTLSeconds, maxTTLSeconds)
		}
		s.TTLSeconds = n
	}
	switch in.AutoRefresh {
	case "":
	case "on", "off":
		on := in.AutoRefresh == "on"
		s.AutoRefresh = &on
	default:
		errs["auto_refresh"] = "Auto-refresh must be on, off or the default."
	}
	var oldEnv, oldHeaders map[string]string
	if old != nil {
		oldEnv, oldHeaders = old.Env, old.Headers
	}
	switch s.Transport {
	case store.TransportStdio:
		s.Command = strings.TrimSpace(in.Command)
		switch {
		case s.Command == "":
			errs["command"] = "Command is required for a stdio server."
		case strings.ContainsAny(s.Command, "\n\r\x00"):
			errs["command"] = "Command must be one line."
		}
		for _, a := range in.Args {
			if strings.ContainsRune(a, 0) {
				errs["args"] = "Arguments must not contain NUL characters."
			}
		}
		s.Args = in.Args
		s.Cwd = strings.TrimSpace(in.Cwd)
		if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
			errs["cwd"] = "Working directory must be an absolute path."
		}
		s.Env = secretMap(in.Env, oldEnv, envKeyPattern, "Environment variable names", "env", errs)
		validateSandbox(in, old, &s, errs)
	case store.TransportHTTP, store.TransportSSE:
		s.URL = strings.TrimSpace(in.URL)
		if old != nil {
			s.URL = KeepMaskedURL(s.URL, old.URL)
		}
		if msg := checkURL(s.URL); msg != "" {
			errs["url"] = msg
		}
		s.Headers = secretMap(in.Headers, oldHeaders, headerKeyPattern, "Header names", "header", errs)
		s.OAuth = validateOAuth(in, old, errs)
	default:
		errs["transport"] = "Transport must be stdio, http or sse."
	}
	return s, errs
}

// Bounds of a sign-in client's fields.
const (
	maxOAuthClientID = 512
	maxOAuthSecret   = 1024
	maxOAuthScopes   = 32
	maxOAuthScope    = 256
)

// scopeToken is an OAuth scope (RFC 6749 3.3: printable ASCII without
// space, " and \).
var scopeToken = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]+$`)

// validateOAuth checks a remote server's sign-in client; nil if none is
// set. old's secret is kept when the secret is left empty (or masked)
// and the client id stays the same.
func validateOAuth(in Input, old *store.Server, errs map[string]string) *store.OAuthClient {
	c := store.OAuthClient{ClientID: strings.TrimSpace(in.OAuthClientID), ClientSecret: in.OAuthClientSecret, Scopes: in.OAuthScopes}
	switch {
	case len(c.ClientID) > maxOAuthClientID:
		errs["oauth_client_id"] = fmt.Sprintf("Client id must be at most %d characters.", maxOAuthClientID)
	case strings.ContainsFunc(c.ClientID, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		errs["oauth_client_id"] = "Client id must be one line of visible characters."
	}
	if c.ClientSecret == "" || c.ClientSecret == SecretMask {
		c.ClientSecret = ""
		if old != nil && old.OAuthSettings().ClientID == c.ClientID {
			c.ClientSecret = old.OAuthSettings().ClientSecret
		}
	}
	switch {
	case len(c.ClientSecret) > maxOAuthSecret:
		errs["oauth_client_secret"] = fmt.Sprintf("Client secret must be at most %d characters.", maxOAuthSecret)
	case strings.ContainsAny(c.ClientSecret, "\r\n\x00"):
		errs["oauth_client_secret"] = "Client secret must be one line."
	case c.ClientSecret != "" && c.ClientID == "":
		errs["oauth_client_secret"] = "A client secret needs its client id."
	}
	if len(c.Scopes) > maxOAuthScopes {
		errs["oauth_scopes"] = fmt.Sprintf("At most %d scopes.", maxOAuthScopes)
	}
	for _, sc := range c.Scopes {
		if len(sc) > maxOAuthScope || !scopeToken.MatchString(sc) {
			errs["oauth_scopes"] = fmt.Sprintf("%q is not a scope: scopes are separated by spaces and use printable ASCII without quotes or backslashes.", sc)
			break
		}
	}
	if c.ClientID == "" && c.ClientSecret == "" && len(c.Scopes) == 0 {
		return nil
	}
	return &c
}

// secretMap turns rows into a map. A row with a name and an empty (or
// masked) value keeps the stored value of that name.
func secretMap(rows []KV, old map[string]string, pattern *regexp.Regexp, what, field string, errs map[string]string) map[string]string {
	out := map[string]string{}
	for i, r := range rows {
		key := strings.TrimSpace(r.Key)
		if key == "" {
			if r.Value != "" {
				errs[field] = fmt.Sprintf("Row %d has a value but no name.", i+1)
			}
			continue
		}
		if !pattern.MatchString(key) {
			errs[field] = fmt.Sprintf("%s must be letters, digits and _ (row %d: %q).", what, i+1, key)
			continue
		}
		if _, dup := out[key]; dup {
			errs[field] = fmt.Sprintf("%q appears twice.", key)
		}
		v := r.Value
		if prev, ok := old[key]; ok && (v == "" || v == SecretMask) {
			v = prev
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			errs[field] = fmt.Sprintf("The value of %q must be one line.", key)
		}
		out[key] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// checkURL returns a message if u is not an http(s) URL Switchboard may
// connect to. Link-local and metadata addresses are always refused.
func checkURL(u string) string {
	if u == "" {
		return "URL is required for a remote server."
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "URL must start with http:// or https:// and name a host."
	}
	if ip, err := netip.ParseAddr(strings.Trim(p.Hostname(), "[]")); err == nil {
		ip = ip.Unmap()
		if ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
			return "Link-local and cloud metadata addresses (169.254.x.x, fe80::) are never contacted."
		}
	}
	if p.User != nil {
		return "Put credentials in a header, not in the URL."
	}
	return ""
}

// sortedKeys returns the map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

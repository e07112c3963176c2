package serverconfig

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
)

// The dashboard's form takes the start timeout in seconds (the API keeps
// milliseconds, in timeout_ms) and the memory cap in MiB.
const (
	minTimeoutMS = 1000
	maxTimeoutMS = 120000
	// DefaultTimeoutSeconds is the start timeout of a server that sets
	// none, as the form says it.
	DefaultTimeoutSeconds = "30"
)

// secondsText is a number of seconds as people type it: up to three
// decimals (milliseconds), with a point or a comma.
var secondsText = regexp.MustCompile(`^[0-9]{1,6}([.,][0-9]{1,3})?$`)

// parseSeconds turns seconds as typed ("2.5", "2,5", "30") into
// milliseconds; ok is false for anything else.
func parseSeconds(s string) (ms int, ok bool) {
	if !secondsText.MatchString(s) {
		return 0, false
	}
	whole, frac, _ := strings.Cut(strings.Replace(s, ",", ".", 1), ".")
	w, err := strconv.Atoi(whole)
	if err != nil {
		return 0, false
	}
	f, _ := strconv.Atoi((frac + "000")[:3])
	return w*1000 + f, true
}

// Seconds spells a number of milliseconds in seconds as the form shows
// it: "2.5", "30", "" for 0 (the default).
func Seconds(ms int) string {
	if ms <= 0 {
		return ""
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

// FormInput reads the add/edit form. Rows with neither name nor value
// are left out; a row removed from the form is not sent, so its variable
// or header is deleted on save. The memory cap is read for stdio servers
// only: the form does not show it to remote ones.
func FormInput(v url.Values) Input {
	in := Input{
		ID:                v.Get("id"),
		Name:              v.Get("name"),
		Transport:         v.Get("transport"),
		Command:           v.Get("command"),
		Cwd:               v.Get("cwd"),
		URL:               v.Get("url"),
		TimeoutSeconds:    v.Get("timeout_s"),
		TTLSeconds:        v.Get("ttl_seconds"),
		AutoRefresh:       v.Get("auto_refresh"),
		DefaultPolicy:     v.Get("default_policy"),
		Enabled:           v.Get("enabled") == "on",
		OAuthClientID:     v.Get("oauth_client_id"),
		OAuthClientSecret: v.Get("oauth_client_secret"),
		OAuthScopes:       strings.Fields(v.Get("oauth_scopes")),
		Env:               formRows(v["env_key"], v["env_value"]),
		Headers:           formRows(v["header_key"], v["header_value"]),
	}
	if in.Transport == store.TransportStdio {
		in.MemoryMB = v.Get("memory_mb")
		in.Sandbox, in.SandboxCPU, in.SandboxProcesses = formSandbox(v)
	}
	for _, a := range strings.Split(ArgsText(v), "\n") {
		if a != "" {
			in.Args = append(in.Args, a)
		}
	}
	return in
}

// ArgsText is the form's arguments as typed, one per line.
func ArgsText(v url.Values) string { return strings.ReplaceAll(v.Get("args"), "\r\n", "\n") }

func formRows(keys, values []string) []KV {
	var rows []KV
	for i, k := range keys {
		v := ""
		if i < len(values) {
			v = values[i]
		}
		if k == "" && v == "" {
			continue
		}
		rows = append(rows, KV{Key: k, Value: v})
	}
	return rows
}

// validateTimeout sets s's start timeout from the form's seconds or the
// API's milliseconds, with a message naming the unit and range.
func validateTimeout(in Input, s *store.Server, errs map[string]string) {
	if t := strings.TrimSpace(in.TimeoutSeconds); t != "" {
		ms, ok := parseSeconds(t)
		if !ok || ms < minTimeoutMS || ms > maxTimeoutMS {
			errs["timeout_s"] = "Start timeout must be a number of seconds from 1 to 120 (decimals allowed, e.g. 2.5), or empty for " + DefaultTimeoutSeconds + "."
		}
		s.TimeoutMS = ms
		return
	}
	if t := strings.TrimSpace(in.TimeoutMS); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < minTimeoutMS || n > maxTimeoutMS {
			errs["timeout_ms"] = "Timeout must be a whole number of milliseconds from 1000 to 120000."
		}
		s.TimeoutMS = n
	}
}

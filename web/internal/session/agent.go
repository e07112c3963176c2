package session

import "strings"

// AgentFamily is the browser family a User-Agent header names
// ("Firefox", "Chrome", …), "" if none it knows: enough for a person to
// tell their sessions apart, and nothing that identifies them further.
func AgentFamily(ua string) string {
	for _, f := range []struct{ marker, family string }{
		{"Edg/", "Edge"},
		{"OPR/", "Opera"},
		{"Firefox/", "Firefox"},
		{"Chrome/", "Chrome"},
		{"Chromium/", "Chrome"},
		{"Safari/", "Safari"},
		{"curl/", "curl"},
	} {
		if strings.Contains(ua, f.marker) {
			return f.family
		}
	}
	return ""
}

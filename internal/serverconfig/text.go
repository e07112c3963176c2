// Package serverconfig is a server's configuration as people and
// programs write it: the input of the form and the API and its
// validation, the command line as a shell would need it typed, and the
// import and export of MCP client config files (read and written by
// internal/clientconfig) against the store. The dashboard and the CLI share
// it.
package serverconfig

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/switchboard-dev/switchboard/store"
)

// CommandLine renders the exact command as a shell would need it typed,
// quoting every argument that needs it, never truncated.
func CommandLine(command string, args []string) string {
	parts := make([]string, 0, 1+len(args))
	for _, p := range append([]string{command}, args...) {
		parts = append(parts, shellQuote(p))
	}
	return strings.Join(parts, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

func shellQuote(s string) string {
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// Target is what a person confirms and sees of a server: its exact
// command line, or its URL.
func Target(s store.Server) string {
	if s.Transport == store.TransportStdio {
		return CommandLine(s.Command, s.Args)
	}
	return s.URL
}

// SettingsText is a server's timeout, memory cap, TTL and auto-refresh as
// a form holds them ("" for the default).
func SettingsText(s store.Server) (timeoutMS, memoryMB, ttlSeconds, autoRefresh string) {
	text := func(n int) string {
		if n > 0 {
			return strconv.Itoa(n)
		}
		return ""
	}
	return text(s.TimeoutMS), text(s.MemoryMB), text(s.TTLSeconds), OnOff(s.AutoRefresh)
}

// OnOff spells an optional switch as the form does: "", "on" or "off".
func OnOff(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "on"
	}
	return "off"
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

// A routed line says what the agent did: called a tool, read a resource,
// got a prompt.
func TestRoutedLineSaysWhatWasDone(t *testing.T) {
	for _, tc := range []struct{ method, want string }{
		{"", "cursor called fx__read: allowed by policy, ok, 3ms"},
		{"resources/read", "cursor read switchboard://fx/test://a: allowed by policy, ok, 3ms"},
		{"prompts/get", "cursor got the prompt fx__p: denied by dashboard, refused, 3ms: the person denied it"},
	} {
		var out bytes.Buffer
		log := newTerminal("text", &out).log
		attrs := []any{"agent", "cursor", "tool", "fx__read", "decision", "allowed", "by", "policy", "outcome", "ok", "duration", "3ms"}
		switch tc.method {
		case "resources/read":
			attrs[3] = "switchboard://fx/test://a"
		case "prompts/get":
			attrs[3], attrs[5], attrs[7], attrs[9] = "fx__p", "denied", "dashboard", "refused"
			attrs = append(attrs, "reason", "the person denied it")
		}
		if tc.method != "" {
			attrs = append(attrs, "method", tc.method)
		}
		log.Info("routed call", attrs...)
		if got := strings.TrimSpace(out.String()); !strings.HasSuffix(got, " "+tc.want) {
			t.Errorf("line = %q; want it to end %q", got, tc.want)
		}
	}
}

package serverconfig

import (
	"os"
	"regexp"
	"strings"

	"github.com/google/shlex"

	"github.com/switchboard-dev/switchboard/store"
)

// A command line pasted whole into the form's Command field ("npx -y
// @modelcontextprotocol/server-filesystem ~/notes", as a README shows
// it) would be taken for the name of one program, and not found. The
// form splits it instead, by shell rules (quotes and backslashes;
// nothing expanded), into the command, its arguments and the NAME=value
// assignments before it (its environment), and shows the split for the
// person to check before anything is saved.

// envAssignment is a shell's NAME=value before a command.
var envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// SplitPasted is in with a command line pasted into its command (a stdio
// server's, with no arguments given) split into the command, its
// arguments and the variables set before it (added to in.Env, a
// variable already there keeping its value). ok is false when there is
// nothing to split: a command of one word, arguments given already, a
// command that names an existing file as typed (a path with spaces), or
// a line shell rules cannot read (an unclosed quote).
func SplitPasted(in Input) (out Input, ok bool) {
	line := strings.TrimSpace(in.Command)
	if in.Transport != store.TransportStdio || len(in.Args) > 0 || !strings.ContainsAny(line, " \t\n") {
		return in, false
	}
	if _, err := os.Stat(line); err == nil {
		return in, false
	}
	words, err := shlex.Split(line)
	if err != nil || len(words) == 0 {
		return in, false
	}
	out = in
	out.Env = append([]KV(nil), in.Env...)
	for len(words) > 1 && envAssignment.MatchString(words[0]) {
		name, value, _ := strings.Cut(words[0], "=")
		if !hasKey(out.Env, name) {
			out.Env = append(out.Env, KV{Key: name, Value: value})
		}
		words = words[1:]
	}
	out.Command, out.Args = words[0], words[1:]
	if len(out.Args) == 0 && len(out.Env) == len(in.Env) {
		return in, false // one word after all
	}
	return out, true
}

func hasKey(rows []KV, key string) bool {
	for _, r := range rows {
		if r.Key == key {
			return true
		}
	}
	return false
}

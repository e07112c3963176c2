package present

import (
	"strconv"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
	"github.com/switchboard-dev/switchboard/web/internal/tooldiff"

	"github.com/switchboard-dev/switchboard/internal/serverconfig"
)

// LaunchChanges is what changed in srv's launch since a person confirmed
// was: the transport, program, each argument added, removed or changed,
// the working directory, env variables added, removed or with a new
// value, the URL and headers. Secret values are never in it: a new value
// is only said to be one.
func LaunchChanges(was store.Launch, srv store.Server) []views.LaunchChange {
	is := store.LaunchOf(srv)
	var out []views.LaunchChange
	out = scalarChange(out, "Transport", was.Transport, is.Transport)
	out = scalarChange(out, "Program", was.Command, is.Command)
	out = append(out, argChanges(was.Args, is.Args)...)
	out = scalarChange(out, "Working directory", was.Cwd, is.Cwd)
	out = append(out, secretChanges("Environment variable", was.Env, is.Env)...)
	out = scalarChange(out, "URL", serverconfig.MaskURL(was.URL), serverconfig.MaskURL(is.URL))
	return append(out, secretChanges("Header", was.Headers, is.Headers)...)
}

// Kinds of change.
const (
	changeAdded   = "added"
	changeRemoved = "removed"
	changeChanged = "changed"
	changeValue   = "value changed"
)

func scalarChange(out []views.LaunchChange, what, was, is string) []views.LaunchChange {
	switch {
	case was == is:
		return out
	case was == "":
		return append(out, views.LaunchChange{What: what, Change: changeAdded, New: is})
	case is == "":
		return append(out, views.LaunchChange{What: what, Change: changeRemoved, Old: was})
	}
	return append(out, views.LaunchChange{What: what, Change: changeChanged, Old: was, New: is})
}

// secretChanges lists the names added and removed, and those whose value
// hash changed, in name order.
func secretChanges(what string, was, is map[string]string) []views.LaunchChange {
	var out []views.LaunchChange
	for _, k := range SortedKeys(union(was, is)) {
		old, inWas := was[k]
		now, inIs := is[k]
		switch {
		case !inWas:
			out = append(out, views.LaunchChange{What: what, Name: k, Change: changeAdded})
		case !inIs:
			out = append(out, views.LaunchChange{What: what, Name: k, Change: changeRemoved})
		case old != now:
			out = append(out, views.LaunchChange{What: what, Name: k, Change: changeValue})
		}
	}
	return out
}

func union(a, b map[string]string) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// argChanges lists the arguments added, removed and changed, aligned as
// tooldiff.Align aligns lines: an argument inserted in the middle is one
// addition, not a change of every argument after it, and a removal facing
// an addition is a change. Added and changed arguments are numbered as
// they are now, removed ones as they were.
func argChanges(was, is []string) []views.LaunchChange {
	var out []views.LaunchChange
	for _, st := range tooldiff.Align(was, is) {
		switch {
		case st.Kind == "del":
			out = append(out, views.LaunchChange{What: argName(st.I), Change: changeRemoved, Old: was[st.I]})
		case st.Kind == "add":
			out = append(out, views.LaunchChange{What: argName(st.J), Change: changeAdded, New: is[st.J]})
		case st.Kind == "change" && was[st.I] != is[st.J]:
			out = append(out, views.LaunchChange{What: argName(st.J), Change: changeChanged, Old: was[st.I], New: is[st.J]})
		}
	}
	return out
}

func argName(i int) string { return "Argument " + strconv.Itoa(i+1) }

package present

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchboard-dev/switchboard/store"
	"github.com/switchboard-dev/switchboard/views"
)

func TestLaunchChanges(t *testing.T) {
	base := store.Server{
		ID: "s", Transport: store.TransportStdio, Command: "npx", Args: []string{"-y", "pkg", "--root", "/tmp"},
		Env: map[string]string{"TOKEN": "s3cret-old", "KEEP": "same", "GONE": "x"}, Cwd: "/srv",
	}
	was := store.LaunchOf(base)
	for _, tc := range []struct {
		name string
		edit func(s *store.Server)
		want []views.LaunchChange
	}{
		{name: "nothing", edit: func(*store.Server) {}},
		{
			name: "one argument changed",
			edit: func(s *store.Server) { s.Args = []string{"-y", "pkg", "--root", "/home"} },
			want: []views.LaunchChange{{What: "Argument 4", Change: "changed", Old: "/tmp", New: "/home"}},
		},
		{
			name: "an argument inserted in the middle is one addition",
			edit: func(s *store.Server) { s.Args = []string{"-y", "pkg", "--verbose", "--root", "/tmp"} },
			want: []views.LaunchChange{{What: "Argument 3", Change: "added", New: "--verbose"}},
		},
		{
			name: "arguments removed are numbered as they were",
			edit: func(s *store.Server) { s.Args = []string{"pkg", "--root"} },
			want: []views.LaunchChange{{What: "Argument 1", Change: "removed", Old: "-y"}, {What: "Argument 4", Change: "removed", Old: "/tmp"}},
		},
		{
			name: "program, directory and env",
			edit: func(s *store.Server) {
				s.Command, s.Cwd = "bunx", ""
				s.Env = map[string]string{"TOKEN": "s3cret-new", "KEEP": "same", "LD_PRELOAD": "/x.so"}
			},
			want: []views.LaunchChange{
				{What: "Program", Change: "changed", Old: "npx", New: "bunx"},
				{What: "Working directory", Change: "removed", Old: "/srv"},
				{What: "Environment variable", Name: "GONE", Change: "removed"},
				{What: "Environment variable", Name: "LD_PRELOAD", Change: "added"},
				{What: "Environment variable", Name: "TOKEN", Change: "value changed"},
			},
		},
		{
			name: "to a remote server",
			edit: func(s *store.Server) {
				*s = store.Server{ID: "s", Transport: store.TransportHTTP, URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}}
			},
			want: []views.LaunchChange{
				{What: "Transport", Change: "changed", Old: "stdio", New: "http"},
				{What: "Program", Change: "removed", Old: "npx"},
				{What: "Argument 1", Change: "removed", Old: "-y"},
				{What: "Argument 2", Change: "removed", Old: "pkg"},
				{What: "Argument 3", Change: "removed", Old: "--root"},
				{What: "Argument 4", Change: "removed", Old: "/tmp"},
				{What: "Working directory", Change: "removed", Old: "/srv"},
				{What: "Environment variable", Name: "GONE", Change: "removed"},
				{What: "Environment variable", Name: "KEEP", Change: "removed"},
				{What: "Environment variable", Name: "TOKEN", Change: "removed"},
				{What: "URL", Change: "added", New: "https://example.com/mcp"},
				{What: "Header", Name: "Authorization", Change: "added"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			s.Args = append([]string(nil), base.Args...)
			tc.edit(&s)
			got := LaunchChanges(was, s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LaunchChanges (-want +got):\n%s", diff)
			}
			for _, c := range got {
				if strings.Contains(c.Old+c.New, "s3cret") {
					t.Errorf("a change shows a secret value: %+v", c)
				}
			}
		})
	}
}

// The launch a confirmation page shows says what changed only when it
// needs confirming again.
func TestLaunchChangedOnlyWhenUnconfirmed(t *testing.T) {
	s := store.Server{ID: "s", Transport: store.TransportStdio, Command: "a"}
	l := store.LaunchOf(s)
	s.LaunchConfirmed, s.ConfirmedLaunch = s.LaunchHash(), &l
	if got := Launch(s, aLinux); got.Changed || got.Changes != nil {
		t.Errorf("Launch(confirmed) = changed %v, %v; want neither", got.Changed, got.Changes)
	}
	s.Command = "b"
	if got := Launch(s, aLinux); !got.Changed || !got.ChangesKnown || len(got.Changes) != 1 {
		t.Errorf("Launch(edited) = changed %v, known %v, %v; want the program's change", got.Changed, got.ChangesKnown, got.Changes)
	}
	s.ConfirmedLaunch = nil // confirmed before Switchboard kept launches
	if got := Launch(s, aLinux); !got.Changed || got.ChangesKnown {
		t.Errorf("Launch(edited, earlier launch unknown) = changed %v, known %v; want changed, unknown", got.Changed, got.ChangesKnown)
	}
}

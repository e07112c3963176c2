package discovery

import (
	"slices"
	"testing"
)

func TestRefusedPaths(t *testing.T) {
	stderr := "starting\n" +
		"Error: EACCES: permission denied, open '/home/u/.ssh/id_rsa'\n" +
		"open /srv/data/x.db: permission denied\n" +
		"PermissionError: [Errno 13] Permission denied: '/etc/shadow'\n" +
		"dial tcp 127.0.0.1:9: connect: permission denied (http://127.0.0.1:9/)\n" +
		"reading /not/refused/here: no such file\n" +
		"Error: EACCES: permission denied, open '/home/u/.ssh/id_rsa'\n"
	got := refusedPaths(stderr)
	want := []string{"/home/u/.ssh/id_rsa", "/srv/data/x.db", "/etc/shadow"}
	if !slices.Equal(got, want) {
		t.Errorf("refusedPaths = %q; want %q", got, want)
	}
}

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

// npm reports a refusal over several lines: the code on one, the path on
// another (as npm 10 wrote it when its cache could not be made).
func TestRefusedPathsOfNpm(t *testing.T) {
	stderr := "npm error code EACCES\n" +
		"npm error syscall mkdir\n" +
		"npm error path /home/me/.npm\n" +
		"npm error errno -13\n" +
		"npm error\n" +
		"npm error Your cache folder contains root-owned files\n" +
		"npm ERR! code E403\n" +
		"npm ERR! path /not/a/refusal\n" +
		"npm error code EPERM\n" +
		"something else\n" +
		"npm error path /after/another/line\n"
	if got, want := refusedPaths(stderr), []string{"/home/me/.npm"}; !slices.Equal(got, want) {
		t.Errorf("refusedPaths = %q; want %q", got, want)
	}
}

package discovery

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestNotFoundInPath(t *testing.T) {
	sep := string(filepath.ListSeparator)
	long := strings.Join([]string{"/a", "/b", "", "/c", "/d", "/e"}, sep)
	for _, c := range []struct{ path, want string }{
		{"", `command "x" not found: the server's PATH is empty`},
		{"/usr/bin" + sep + "/bin", `command "x" not found in its PATH (/usr/bin` + sep + `/bin)`},
		{long, `command "x" not found in the 5 directories of its PATH (/a` + sep + `/b` + sep + `/c` + sep + `…)`},
	} {
		err := notFoundInPath("x", c.path)
		if !errors.Is(err, exec.ErrNotFound) || !strings.HasPrefix(err.Error(), c.want+": ") {
			t.Errorf("PATH %q: %v; want %s: …", c.path, err, c.want)
		}
	}
}

package discovery

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// notFoundInPath is the error for a command no directory of the child's
// PATH holds. It names the first directories and how many there are, not
// the whole PATH: that can run to hundreds of characters, and the error is
// read on a status panel and in a terminal line.
func notFoundInPath(command, path string) error {
	var dirs []string
	for _, d := range filepath.SplitList(path) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	switch {
	case len(dirs) == 0:
		return fmt.Errorf("command %q not found: the server's PATH is empty: %w", command, exec.ErrNotFound)
	case len(dirs) <= 3:
		return fmt.Errorf("command %q not found in its PATH (%s): %w", command, strings.Join(dirs, string(filepath.ListSeparator)), exec.ErrNotFound)
	}
	return fmt.Errorf("command %q not found in the %d directories of its PATH (%s%c…): %w",
		command, len(dirs), strings.Join(dirs[:3], string(filepath.ListSeparator)), filepath.ListSeparator, exec.ErrNotFound)
}

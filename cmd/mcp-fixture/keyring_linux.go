package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// readKey reads the "user" key named name from the session keyring (the
// keyring attempt of -mode escape).
func readKey(name string) (got bool, detail string) {
	id, err := unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", name, 0)
	if err != nil {
		return false, "search: " + err.Error()
	}
	buf := make([]byte, 256)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, id, buf, 0)
	if err != nil {
		return false, "read: " + err.Error()
	}
	return true, fmt.Sprintf("%d bytes", min(n, len(buf)))
}

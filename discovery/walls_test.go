package discovery

import (
	"net"
	"testing"
)

// acceptAll listens on a loopback port and accepts (and closes) every
// connection until the test ends: something a server escaping its walls
// could reach.
func acceptAll(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln
}

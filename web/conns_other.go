//go:build !unix

package web

// maxConns is how many connections the server holds at once. Windows
// has no small descriptor limit for sockets.
func maxConns() int { return 8192 }

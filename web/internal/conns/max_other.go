//go:build !unix

package conns

// Max is how many connections the server holds at once. Windows
// has no small descriptor limit for sockets.
func Max() int { return 8192 }

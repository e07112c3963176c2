// Command etcd is the etcd server (go.etcd.io/etcd/server/v3, the version
// go.mod names), built from this module so that the tests of a team's
// Switchboard run a real etcd cluster of separate processes without
// installing one: the team test (internal/teamtest) builds it, as `go
// build ./cmd/etcd` does. It takes etcd's own flags.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Stamped by `make dist` (-ldflags "-X main.version=… -X main.commit=… -X
// main.date=…"); otherwise read from the build's VCS information.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// versionCmd prints the version, commit, build date and platform.
func versionCmd(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		return usageError("switchboard version takes no arguments")
	}
	c, d := commit, date
	if info, ok := debug.ReadBuildInfo(); ok && (c == "" || d == "") {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && c == "":
				c = s.Value
			case s.Key == "vcs.time" && d == "":
				d = s.Value
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	if d == "" {
		d = "unknown"
	}
	_, err := fmt.Fprintf(stdout, "switchboard %s (commit %s, built %s, %s/%s, %s)\n", version, c, d, runtime.GOOS, runtime.GOARCH, runtime.Version())
	return err
}

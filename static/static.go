// Package static holds the vendored htmx 2 (2.0.8) and htmx-ext-sse
// (2.2.4) builds, the stylesheet and app.js, embedded into the binary.
package static

import "embed"

// FS holds the files served under /static/.
//
//go:embed *.js *.css *.svg
var FS embed.FS

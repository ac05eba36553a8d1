// Package web holds the browser UI. Its built files live in dist/ and are
// embedded into the binary; a committed placeholder page keeps `go build`
// and `go test` working without node. Nothing from the configuration file
// is ever embedded here.
package web

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// FS returns the frontend files rooted at dist/.
func FS() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded at build time; this cannot fail
	}
	return sub
}

// Package integrationdocs embeds the integration API contract and its
// interactive docs: openapi.json (the OpenAPI 3.1 description, the source
// of truth, checked against the route table by the handlers tests) and a
// page that renders it with the vendored Redoc bundle (vendor.sh), so the
// docs work on an appliance without internet access.
package integrationdocs

import (
	"embed"
	"io/fs"
)

//go:embed openapi.json index.html init.js redoc.standalone.js redoc.LICENSE
var files embed.FS

// FS returns the embedded files.
func FS() fs.FS { return files }

// OpenAPI returns the OpenAPI document.
func OpenAPI() []byte {
	data, err := files.ReadFile("openapi.json")
	if err != nil {
		panic(err) // embedded at build time; cannot fail
	}
	return data
}

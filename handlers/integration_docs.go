package handlers

import (
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"beaconhub/appliance/apperr"
	integrationdocs "beaconhub/web/integration-docs"

	"github.com/julienschmidt/httprouter"
)

// docsCSP locks the interactive docs to the appliance: scripts and data
// from this origin only, no inline script, no frames. Redoc renders with
// inline styles and runs its search index in a blob: worker, hence those
// two allowances.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// integrationDocs serves GET /integration/docs (the page) and
// /integration/docs/:filename (its assets) from the embedded files.
func (s *Server) integrationDocs(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	name := p.ByName("filename")
	if name == "" {
		name = "index.html"
	} else if name == "index.html" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return apperr.NotFound("no such file")
	}
	data, err := fs.ReadFile(integrationdocs.FS(), name)
	if err != nil {
		return apperr.NotFound("no such file")
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "text/plain; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", docsCSP)
	w.Header().Set("Referrer-Policy", "no-referrer")
	if name == "index.html" {
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Cache-Control", "public, max-age=3600")
	}
	_, _ = w.Write(data)
	return nil
}

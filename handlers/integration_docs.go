package handlers

import (
	"net/http"

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
func (s *Server) integrationDocs(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	name := p.ByName("filename")
	if name == "" {
		name = "index.html"
	} else if name == "index.html" || !assetName(name) {
		return apperr.NotFound("no such file")
	}
	// Set before the lookup: a 404 for a docs path carries them too.
	w.Header().Set("Content-Security-Policy", docsCSP)
	w.Header().Set("Referrer-Policy", "no-referrer")
	return writeEmbedded(w, r, integrationdocs.FS(), name, func([]byte) string { return "text/plain; charset=utf-8" })
}

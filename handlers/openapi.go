package handlers

import (
	"net/http"

	integrationdocs "beaconhub/web/integration-docs"

	"github.com/julienschmidt/httprouter"
)

// openAPI serves the integration API's OpenAPI 3.1 description as stored
// (no envelope: it is a document for tools, not an API answer). Tests keep
// it equal to the route table and validate it with an OpenAPI validator.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	// Browsers on another origin (an integrator's tooling) may read it.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(integrationdocs.OpenAPI())
	return nil
}

package http

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the OpenAPI 3 description of every route Handler serves;
// TestOpenAPIMatchesRoutes keeps the two in step.
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(openapiDoc)
	return err
}

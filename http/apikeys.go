package http

import (
	"net/http"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
)

// newKey is the reply of POST /api-keys: the key, and its secret, shown
// this once.
type newKey struct {
	*quan.APIKey
	Key string `json:"key"`
}

// createKey is POST /api-keys {name, shopNo, scopes}: 201 with the key's
// secret, which is never shown again.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	var in apikeys.NewKey
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	k, secret, err := s.Keys.Create(r.Context(), who, in)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, newKey{APIKey: k, Key: secret})
	return nil
}

// listKeys is GET /api-keys: every key, revoked ones too, newest first,
// without their secrets.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	ks, err := s.Keys.List(r.Context(), who)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"items": ks})
	return nil
}

// revokeKey is POST /api-keys/{id}/revoke: refused at once by this
// process, within apikeys.DefaultCacheFor by every other.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "service key")
	if err != nil {
		return err
	}
	k, err := s.Keys.Revoke(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, k)
	return nil
}

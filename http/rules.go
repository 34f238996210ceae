package http

import (
	"net/http"

	"github.com/quanhq/quan/templates"
)

// templateRules is GET /templates/{id}/rules: every version of the
// template's rules and the one in force now.
func (s *Server) templateRules(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	info, err := s.Templates.RulesVersions(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, info)
	return nil
}

// changeRules is POST /templates/{id}/rules {eligibility?, applies?,
// effectiveAt?, applyToIssued?}: a new version of the rules of an active
// or paused template, answered 201 with the version.
func (s *Server) changeRules(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	var in templates.RulesChange
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	v, err := s.Templates.ChangeRules(r.Context(), who, id, in)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, v)
	return nil
}

// evaluateRules is POST /templates/{id}/rules/evaluate {user, order?,
// now?, eligibility?, applies?}: what each rule gives on sample facts.
func (s *Server) evaluateRules(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	var in templates.RulesSample
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	res, err := s.Templates.EvaluateRules(r.Context(), who, id, in)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, res)
	return nil
}

package http

import (
	"fmt"
	"net/http"

	"github.com/quanhq/quan"
)

// createCodeBatch is POST /templates/{id}/code-batches {count}: 202 with
// the batch, generating; GET it for the progress.
func (s *Server) createCodeBatch(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	var body struct {
		Count int64 `json:"count"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	b, err := s.Codes.Create(r.Context(), who, id, body.Count)
	if err != nil {
		return err
	}
	w.Header().Set("Location", fmt.Sprintf("/api/v1/code-batches/%d", b.ID))
	s.writeJSON(w, http.StatusAccepted, b)
	return nil
}

func (s *Server) getCodeBatch(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "code batch")
	if err != nil {
		return err
	}
	b, err := s.Codes.Get(r.Context(), who, id)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, b)
	return nil
}

// exportCodes serves GET /code-batches/{id}/codes.csv and codes.xlsx.
func (s *Server) exportCodes(xlsx bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		who, id, err := target(r, "code batch")
		if err != nil {
			return err
		}
		b, codes, err := s.Codes.Export(r.Context(), who, id)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("codes-%d", b.ID)
		if xlsx {
			w.Header().Set("Content-Type", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.xlsx"`)
			if err := s.CodesExport.Write(r.Context(), w, codes); err != nil {
				s.logger().Warn("export codes", "batch", id, "err", err)
			}
			return nil
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
		if err := quan.WriteCodesCSV(w, codes); err != nil {
			s.logger().Warn("export codes", "batch", id, "err", err)
		}
		return nil
	}
}

// redeemCode is POST /codes/redeem {code} (user): 201 with the coupon.
func (s *Server) redeemCode(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	var body struct {
		Code string `json:"code"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		return err
	}
	c, err := s.Codes.Redeem(r.Context(), who, body.Code)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusCreated, c)
	return nil
}

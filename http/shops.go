package http

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/quanhq/quan"
)

// shopTarget returns who asks and the shop of the path.
func shopTarget(r *http.Request) (quan.Identity, int64, error) {
	who, err := identity(r)
	if err != nil {
		return who, 0, err
	}
	shop, err := strconv.ParseInt(r.PathValue("shopNo"), 10, 64)
	if err != nil || shop <= 0 {
		return who, 0, quan.Errorf(quan.ENOTFOUND, "no shop %q", r.PathValue("shopNo"))
	}
	return who, shop, nil
}

// getShopSettings is GET /shops/{shopNo}/settings (the shop's merchant or
// an admin): the shop's settings, zero ones if it never set any.
func (s *Server) getShopSettings(w http.ResponseWriter, r *http.Request) error {
	who, shop, err := shopTarget(r)
	if err != nil {
		return err
	}
	st, err := s.Shops.Settings(r.Context(), who, shop)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, st)
	return nil
}

// shopSettingsBody is what PUT /shops/{shopNo}/settings takes: every
// setting (a PUT replaces them all), and the shop, which may be left out.
type shopSettingsBody struct {
	ShopNo        int64  `json:"shopNo"`
	DailyClaimCap *int64 `json:"dailyClaimCap"`
}

// putShopSettings is PUT /shops/{shopNo}/settings (the shop's merchant or
// an admin): replaces the shop's settings, 200 with them as stored.
func (s *Server) putShopSettings(w http.ResponseWriter, r *http.Request) error {
	who, shop, err := shopTarget(r)
	if err != nil {
		return err
	}
	var b shopSettingsBody
	if err := decodeJSON(w, r, &b); err != nil {
		return err
	}
	var bad []quan.FieldError
	if b.ShopNo != 0 && b.ShopNo != shop {
		bad = append(bad, quan.FieldError{Field: "shopNo", Message: fmt.Sprintf("is %d, the shop of the path: leave it out or make it %d", b.ShopNo, shop)})
	}
	if b.DailyClaimCap == nil {
		bad = append(bad, quan.FieldError{Field: "dailyClaimCap", Message: "is required (0: no cap)"})
	}
	if len(bad) > 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid shop settings", Fields: bad}
	}
	st, err := s.Shops.SetSettings(r.Context(), who, shop, quan.ShopSettings{DailyClaimCap: *b.DailyClaimCap})
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, st)
	return nil
}

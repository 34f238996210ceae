package http

import (
	"net/http"
	"time"

	"github.com/quanhq/quan"
)

// maxClaimWait bounds ?wait= on a claim poll.
const maxClaimWait = 10 * time.Second

// claim takes a claim: 202 with the pending claim and its Location (200
// with the claim as decided, for a retry with the Idempotency-Key of a
// claim the store has decided), or a refusal (409 with sold_out, limit_reached, not_started, ended or paused;
// 404 for an unknown template; 429 with Retry-After over a rate limit).
// The claim goes on if the client leaves.
func (s *Server) claim(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	if who.Role == quan.RoleService {
		// A platform's key claims for the user its body names.
		var body struct {
			UserID int64 `json:"userId"`
		}
		if err := decodeJSON(w, r, &body); err != nil {
			return err
		}
		if body.UserID <= 0 {
			var v quan.Validation
			v.Add("userId", "name the user to claim for: a positive user id")
			return v.Err("invalid claim")
		}
		who = who.ForUser(body.UserID)
	}
	c, err := s.Claims.Claim(r.Context(), who, id, r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/claims/"+c.ID)
	status := http.StatusAccepted
	if c.Status != quan.ClaimPending {
		status = http.StatusOK // a retry whose claim the store has decided
	}
	s.writeClaim(w, status, c)
	return nil
}

// claimCode takes a claim by promo code (口令券): as claim, of the active
// template whose promoCode is {code} (in any case). 404 for a code no
// active template holds; 400 naming "code" for one malformed; 429 with
// Retry-After once the caller typed too many wrong codes.
func (s *Server) claimCode(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	c, err := s.Claims.ClaimCode(r.Context(), who, r.PathValue("code"), r.Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/claims/"+c.ID)
	status := http.StatusAccepted
	if c.Status != quan.ClaimPending {
		status = http.StatusOK // a retry whose claim the store has decided
	}
	s.writeClaim(w, status, c)
	return nil
}

// getClaim returns a claim of the caller: pending, issued (with the
// coupon) or failed (with the reason). ?wait=2s waits up to that long for
// a pending claim to be decided.
func (s *Server) getClaim(w http.ResponseWriter, r *http.Request) error {
	who, err := identity(r)
	if err != nil {
		return err
	}
	var wait time.Duration
	q := newQuery(r)
	if v := q.str("wait"); v != "" {
		wait, err = time.ParseDuration(v)
		if err != nil || wait < 0 || wait > maxClaimWait {
			q.add("wait", "%q: give a duration such as 2s, at most %s", v, maxClaimWait)
		}
	}
	if err := q.err("invalid claim query"); err != nil {
		return err
	}
	c, err := s.Claims.Get(r.Context(), who, r.PathValue("id"), wait)
	if err != nil {
		return err
	}
	s.writeClaim(w, http.StatusOK, c)
	return nil
}

package http

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/quanhq/quan"
)

// maxClaimWait bounds ?wait= on a claim poll.
const maxClaimWait = 10 * time.Second

// claim takes a claim: 202 with the pending claim and its Location, or a
// refusal (409 with sold_out, limit_reached, not_started, ended or paused;
// 404 for an unknown template). The claim goes on if the client leaves.
func (s *Server) claim(w http.ResponseWriter, r *http.Request) error {
	who, id, err := target(r, "template")
	if err != nil {
		return err
	}
	if err := s.limitClaim(w, r, who, id); err != nil {
		return err
	}
	c, err := s.Claims.Claim(r.Context(), who, id)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/claims/"+c.ID)
	s.writeJSON(w, http.StatusAccepted, c)
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
	if v := r.URL.Query().Get("wait"); v != "" {
		wait, err = time.ParseDuration(v)
		if err != nil || wait < 0 || wait > maxClaimWait {
			return quan.Errorf(quan.EINVALID, "wait %q: give a duration such as 2s, at most %s", v, maxClaimWait)
		}
	}
	c, err := s.Claims.Get(r.Context(), who, r.PathValue("id"), wait)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, c)
	return nil
}

// limitClaim takes a token from the caller's bucket and the template's,
// both or neither, in one call of the limiter, or answers 429 with
// Retry-After: when the bucket that refused (the one that waits longest,
// if both did) has a token again.
func (s *Server) limitClaim(w http.ResponseWriter, r *http.Request, who quan.Identity, tpl int64) error {
	l := s.ClaimLimits
	if s.Limiter == nil {
		return nil
	}
	var (
		all      [2]quan.Bucket
		template [2]bool // whether all[i] is the template's bucket, not the user's
	)
	buckets := all[:0]
	if l.UserRate > 0 {
		buckets = append(buckets, quan.Bucket{Key: "claim:user:" + strconv.FormatInt(who.UserID, 10), Rate: l.UserRate, Burst: max(l.UserBurst, 1)})
	}
	if l.TemplateRate > 0 {
		template[len(buckets)] = true
		buckets = append(buckets, quan.Bucket{Key: "claim:template:" + strconv.FormatInt(tpl, 10), Rate: l.TemplateRate, Burst: max(l.TemplateBurst, 1)})
	}
	if len(buckets) == 0 {
		return nil
	}
	refused, wait, err := s.Limiter.Allow(r.Context(), buckets...)
	if err != nil {
		return err
	}
	if refused < 0 {
		return nil
	}
	if refused >= len(buckets) {
		return fmt.Errorf("rate limiter refused bucket %d of %d", refused, len(buckets))
	}
	what := "you sent too many claims"
	if template[refused] {
		what = fmt.Sprintf("template %d gets too many claims", tpl)
	}
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	return quan.Errorf(quan.ERATELIMITED, "%s: try again in %s", what, wait.Round(time.Millisecond))
}

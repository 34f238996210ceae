package quan

import (
	"fmt"
	"strings"
)

// A promo code (口令券) is a template's shared public code, such as
// DOUBLE11, which any number of users type to claim its coupons
// (TemplateSpec.PromoCode). Unlike a redemption code (券码), which one
// coupon carries and one user redeems once, a promo code names a
// template: a claim by it is a claim of the template, with its stock,
// limits and eligibility.
//
// Codes are case-insensitive: they are kept upper-case
// (NormalizePromoCode), and one code belongs to at most one template that
// is active or paused at a time (PromoCodeHeld). A draft holds none yet,
// and an ended template frees its code for another.
const (
	MinPromoCode = 4
	MaxPromoCode = 32
)

// PromoCodeChars describes the symbols a promo code may hold, for
// messages.
const PromoCodeChars = "letters A-Z (either case), digits 0-9, - and _"

// NormalizePromoCode returns code as it is kept and looked up: its ASCII
// letters upper-case. It does not check it (PromoCodeProblem).
func NormalizePromoCode(code string) string {
	return strings.ToUpper(code)
}

// PromoCodeProblem says what is wrong with code, "" if nothing: it must
// be MinPromoCode to MaxPromoCode of PromoCodeChars.
func PromoCodeProblem(code string) string {
	if len(code) < MinPromoCode || len(code) > MaxPromoCode {
		return fmt.Sprintf("must be %d to %d characters: %s", MinPromoCode, MaxPromoCode, PromoCodeChars)
	}
	for i := range len(code) {
		switch c := code[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return fmt.Sprintf("%q is not allowed: use %s", rune(code[i]), PromoCodeChars)
		}
	}
	return ""
}

// PromoCodeHeld is the ECONFLICT error of a template that would hold
// code while another active or paused template holds it.
func PromoCodeHeld(code string) error {
	return &Error{Code: ECONFLICT,
		Message: fmt.Sprintf("the promo code %s belongs to another active or paused template: end it first, or choose another code", code),
		Fields:  []FieldError{{Field: "promoCode", Message: fmt.Sprintf("%s is taken by another active or paused template", code)}}}
}

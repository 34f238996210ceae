// Package codes makes batches of one-time redemption codes (券码) in the
// background and redeems a code into a coupon for the user who presents
// it, under the same stock, limits and eligibility as a claim.
package codes

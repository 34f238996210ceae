// Package stats answers merchants' and admins' questions about how
// their coupons did (issued, claimed, used, expired, refused, by hour and
// in total), and counts the claims refused before the store for them
// (RefusalCounter).
package stats

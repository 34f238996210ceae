// Package shops keeps the shops' settings, such as the daily cap on
// the claims of a shop's templates, and serves them to the claim path
// from memory.
package shops

// Package reconcile compares the cache's stock and per-user counts with
// the store's, which is the truth, and repairs the cache where they
// differ by more than the work in flight (claims on the bus, chunks being
// applied), reading twice so that a claim between two reads is not taken
// for drift.
package reconcile

// Package events relays the outbox (quan.EventStore) to the systems
// downstream: every event recorded with its change is published on the
// bus with a de-duplication id, at least once, by whichever process's
// Relay takes it.
package events

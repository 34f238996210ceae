// Package notify tells users about their coupons: it records nothing
// itself (the distribution records what a chunk owes), but dispatches the
// email and SMS messages queued in the store to their senders, under
// leases, rate limits, quiet hours and retries (Dispatcher); serves the
// inbox, popups, contacts and unsubscribe links (Service); and schedules
// the reminders of coupons expiring and templates opening (Reminders).
package notify

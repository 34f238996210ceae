// Package accounts keeps the operator console's accounts and signs
// their people in: passwords (bcrypt over a keyed pre-hash), sessions, and
// the throttling of failed sign-ins. It runs on a quan.AccountStore.
package accounts

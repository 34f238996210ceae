// Package claims takes flash-sale claims (领券): a claim is checked and
// reserved in the cache at once, handed to the bus durably before it is
// answered, and persisted in batches as it comes off the bus. Rate
// limits, per-user and period limits, the shops' daily caps and the
// templates' eligibility rules are decided before the reservation; the
// reaper gives back the reservations of claims whose process died before
// handing them off. It runs on the cache, bus and store ports of package
// quan, and asks the shops, the rules and the users' facts through small
// interfaces of its own.
package claims

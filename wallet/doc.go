// Package wallet is the users' coupons after they are issued (我的优惠券)
// and their settlement with orders (核销): list, quote an order, lock,
// redeem, release and refund, the expiry sweep and the archive; and the
// shop's customer service over them (Staff: search, history, revoke). The
// store records each change's event in its transaction (quan.EventStore);
// package events relays them.
package wallet

package prom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan"
)

// Wallet collects the wallet's counters: coupon state changes and the
// order locks the sweeper released.
func Wallet(c *quan.WalletCounters) prometheus.Collector { return walletCollector{c} }

var (
	couponTransitionsDesc = prometheus.NewDesc("quan_coupon_transitions_total",
		"Coupon status changes by this process, by from and to status and result: ok (written; once per coupon), refused (an illegal transition or a conflict; once per request), error (the store failed; once per request, a failed sweep as available to expired).",
		[]string{"from", "to", "result"}, nil)
	couponLocksExpiredDesc = prometheus.NewDesc("quan_coupon_locks_expired_total",
		"Order locks that ran out, released by the sweeper.", nil, nil)
)

// walletCollector reads a wallet.Service's counters at each scrape.
type walletCollector struct{ c *quan.WalletCounters }

func (walletCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- couponTransitionsDesc
	ch <- couponLocksExpiredDesc
}

func (k walletCollector) Collect(ch chan<- prometheus.Metric) {
	k.c.EachTransition(func(from, to quan.CouponStatus, result string, n int64) {
		counter(ch, couponTransitionsDesc, n, string(from), string(to), result)
	})
	counter(ch, couponLocksExpiredDesc, k.c.LocksExpired.Load())
}

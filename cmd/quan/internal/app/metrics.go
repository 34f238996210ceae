package app

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quanhq/quan/prom"
)

// instrument wraps the backends in decorators that time their calls and
// count their failures in reg (prom.BackendMetrics). Each backend keeps its place: a shared
// cache, wrapped once, is still every role it was (claims' cache, ledger
// and reserver, limiter, idempotency store), and Cache and ClaimCache,
// Bus and ClaimBus, stay one when they were one. It runs before the use
// cases are built over the backends, and only with metrics on: with them
// off the backends are not wrapped at all.
func (b *Backends) instrument(reg prometheus.Registerer) {
	m := prom.NewBackendMetrics(reg)
	b.Store = m.Store(b.Store)

	cache, claimCache := b.Cache, b.ClaimCache
	switch {
	case b.SharedCache != nil:
		s := m.SharedCache(b.SharedCache)
		b.SharedCache, b.Cache, b.ClaimCache, b.Limiter, b.Idempotency = s, s, s, s, s
	default:
		if cache != nil {
			b.Cache = m.Cache(cache)
		}
		switch {
		case claimCache == nil:
		case claimCache == cache:
			b.ClaimCache = b.Cache
		default:
			b.ClaimCache = m.Cache(claimCache)
		}
	}

	bus, claimBus := b.Bus, b.ClaimBus
	if bus != nil {
		b.Bus = m.Bus(bus)
	}
	switch {
	case claimBus == nil:
	case claimBus == bus:
		b.ClaimBus = b.Bus
	default:
		b.ClaimBus = m.Bus(claimBus)
	}
}

// observeHTTP is the API's hook into the request metrics, nil with
// metrics off.
func (a *App) observeHTTP() func(string, int, time.Duration) {
	if a.httpMetrics == nil {
		return nil
	}
	return a.httpMetrics.Observe
}

// unavailableHTTP is the API's hook into the count of requests answered
// 503 for a backend down, nil with metrics off.
func (a *App) unavailableHTTP() func(string) {
	if a.httpMetrics == nil {
		return nil
	}
	return a.httpMetrics.Unavailable
}

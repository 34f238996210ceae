package http

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the reverse proxies whose forwarding headers
// (X-Forwarded-For, X-Real-IP) are believed; nil believes none. Anyone
// can write those headers, so only a proxy the operator runs may say who
// its client is.
type Proxies []netip.Prefix

// ParseProxies parses a comma-separated list of CIDRs (10.0.0.0/8,
// fd00::/8) and single addresses (192.0.2.7, which is 192.0.2.7/32); ""
// is none. An entry that is neither is an error naming it.
func ParseProxies(s string) (Proxies, error) {
	var ps Proxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR (10.0.0.0/8) nor an IP address", f)
		}
		a = a.Unmap()
		ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
	}
	return ps, nil
}

// String lists ps as ParseProxies reads them.
func (ps Proxies) String() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ",")
}

// trusts reports whether a is one of the proxies.
func (ps Proxies) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr returns the IP address of r's client, without a port. It
// is the connection's peer unless the peer is one of the proxies; then
// it is the rightmost address of X-Forwarded-For that is not one of the
// proxies (each proxy appends the address it was connected from, so the
// addresses left of the first untrusted one, which the client may have
// written, are not read), the leftmost if all are proxies; without
// X-Forwarded-For, X-Real-IP. A forwarded value that is no IP address is
// not believed: the peer's address is returned.
func (ps Proxies) ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || len(ps) == 0 || !ps.trusts(peer) {
		return host
	}
	if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		hops := strings.Split(strings.Join(xff, ","), ",")
		client := peer
		for i := len(hops) - 1; i >= 0; i-- {
			a, ok := parseHop(hops[i])
			if !ok {
				return host
			}
			client = a
			if !ps.trusts(a) {
				break
			}
		}
		return client.String()
	}
	if real := r.Header.Get("X-Real-IP"); real != "" {
		if a, ok := parseHop(real); ok {
			return a.String()
		}
	}
	return host
}

// parseHop reads one address of a forwarding header: an IP, maybe with a
// port (1.2.3.4:5, [::1]:5), as some proxies write it.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

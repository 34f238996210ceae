package http_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	qhttp "github.com/quanhq/quan/http"
)

func TestClientAddr(t *testing.T) {
	t.Parallel()
	proxies, err := qhttp.ParseProxies("10.0.0.0/8, 192.0.2.7,fd00::/8")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		proxies qhttp.Proxies
		peer    string
		xff     []string
		realIP  string
		want    string
	}{
		{"NoProxiesIgnoreHeaders", nil, "10.1.2.3:5555", []string{"203.0.113.9"}, "203.0.113.8", "10.1.2.3"},
		{"UntrustedPeerIgnored", proxies, "198.51.100.4:5555", []string{"203.0.113.9"}, "203.0.113.8", "198.51.100.4"},
		{"TrustedPeerNoHeaders", proxies, "10.1.2.3:5555", nil, "", "10.1.2.3"},
		{"OneProxy", proxies, "10.1.2.3:5555", []string{"203.0.113.9"}, "", "203.0.113.9"},
		{"ForgedLeftmostNotRead", proxies, "10.1.2.3:5555", []string{"1.1.1.1, 203.0.113.9"}, "", "203.0.113.9"},
		{"ProxyChain", proxies, "10.1.2.3:5555", []string{"1.1.1.1, 203.0.113.9, 192.0.2.7", "10.9.9.9"}, "", "203.0.113.9"},
		{"AllProxiesLeftmost", proxies, "10.1.2.3:5555", []string{"10.0.0.5, 192.0.2.7"}, "", "10.0.0.5"},
		{"PortInHop", proxies, "10.1.2.3:5555", []string{"203.0.113.9:41000"}, "", "203.0.113.9"},
		{"IPv6", proxies, "[fd00::1]:5555", []string{"2001:db8::5"}, "", "2001:db8::5"},
		{"IPv4MappedPeer", proxies, "[::ffff:10.1.2.3]:5555", []string{"203.0.113.9"}, "", "203.0.113.9"},
		{"GarbageHopNotBelieved", proxies, "10.1.2.3:5555", []string{"203.0.113.9, not-an-ip"}, "", "10.1.2.3"},
		{"RealIP", proxies, "10.1.2.3:5555", nil, "203.0.113.8", "203.0.113.8"},
		{"ForwardedForBeforeRealIP", proxies, "10.1.2.3:5555", []string{"203.0.113.9"}, "203.0.113.8", "203.0.113.9"},
		{"GarbageRealIP", proxies, "10.1.2.3:5555", nil, "somewhere", "10.1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/console/login", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if tc.realIP != "" {
				r.Header.Set("X-Real-IP", tc.realIP)
			}
			if got := tc.proxies.ClientAddr(r); got != tc.want {
				t.Errorf("ClientAddr = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseProxies(t *testing.T) {
	t.Parallel()
	ps, err := qhttp.ParseProxies(" 10.1.2.3/8 ,192.0.2.7,::1, ")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ps.String(), "10.0.0.0/8,192.0.2.7/32,::1/128"; got != want {
		t.Errorf("parsed %q, want %q", got, want)
	}
	if ps, err := qhttp.ParseProxies(""); err != nil || len(ps) != 0 {
		t.Errorf(`ParseProxies("") = %v, %v; want none`, ps, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.internal", "10.0.0.0/8,300.1.1.1"} {
		_, err := qhttp.ParseProxies(bad)
		if err == nil || !strings.Contains(err.Error(), "is neither a CIDR") {
			t.Errorf("ParseProxies(%q) = %v, want an error naming the entry", bad, err)
		}
	}
}

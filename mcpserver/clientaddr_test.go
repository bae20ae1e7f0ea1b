package mcpserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/ratelimit"
)

func TestClientAddr(t *testing.T) {
	proxies, err := mcpserver.ParseTrustedProxies([]string{"10.0.0.0/8", " 192.0.2.1 ", "", "2001:db8:cafe::/48"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		peer   string
		header map[string][]string
		want   string
	}{
		{"no proxy, no header", "198.51.100.9:4711", nil, "198.51.100.9"},
		{"an untrusted peer's X-Forwarded-For is ignored", "198.51.100.9:4711", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "198.51.100.9"},
		{"an untrusted peer's Forwarded is ignored", "198.51.100.9:4711", map[string][]string{"Forwarded": {"for=203.0.113.7"}}, "198.51.100.9"},
		{"a trusted proxy without a header", "10.1.2.3:4711", nil, "10.1.2.3"},
		{"one hop", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"a spoofed entry left of the proxy's is not reached", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"1.1.1.1, 203.0.113.7"}}, "203.0.113.7"},
		{"trusted hops skipped from the right", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"1.1.1.1, 203.0.113.7, 10.9.9.9, 192.0.2.1"}}, "203.0.113.7"},
		{"header lines joined in order", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"1.1.1.1", "203.0.113.7"}}, "203.0.113.7"},
		{"every hop trusted: the leftmost", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"10.0.0.5, 10.0.0.6"}}, "10.0.0.5"},
		{"a port on an entry", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"203.0.113.7:5555"}}, "203.0.113.7"},
		{"IPv6 in X-Forwarded-For", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"2001:db8::1"}}, "2001:db8::1"},
		{"bracketed IPv6 with a port", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"[2001:db8::1]:80"}}, "2001:db8::1"},
		{"IPv4-mapped IPv6 is IPv4", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"::ffff:203.0.113.7"}}, "203.0.113.7"},
		{"garbage in the chain: the peer", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"203.0.113.7, not-an-ip"}}, "10.1.2.3"},
		{"an empty entry: the peer", "10.1.2.3:4711", map[string][]string{"X-Forwarded-For": {"203.0.113.7,,"}}, "10.1.2.3"},
		{"Forwarded", "10.1.2.3:4711", map[string][]string{"Forwarded": {"for=203.0.113.7;proto=https;by=10.1.2.3"}}, "203.0.113.7"},
		{"Forwarded wins over X-Forwarded-For", "10.1.2.3:4711", map[string][]string{"Forwarded": {"for=203.0.113.7"}, "X-Forwarded-For": {"198.51.100.1"}}, "203.0.113.7"},
		{"Forwarded chain, names in any case", "10.1.2.3:4711", map[string][]string{"Forwarded": {`For=1.1.1.1, for=203.0.113.7;proto=http, FOR=10.2.2.2`}}, "203.0.113.7"},
		{"Forwarded quoted IPv6 with a port", "10.1.2.3:4711", map[string][]string{"Forwarded": {`for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"Forwarded quoted IPv6, trusted, then IPv4", "10.1.2.3:4711", map[string][]string{"Forwarded": {`for=203.0.113.7, for="[2001:db8:cafe::17]"`}}, "203.0.113.7"},
		{"Forwarded over two lines", "10.1.2.3:4711", map[string][]string{"Forwarded": {"for=1.1.1.1", "for=203.0.113.7"}}, "203.0.113.7"},
		{"Forwarded unknown: the peer", "10.1.2.3:4711", map[string][]string{"Forwarded": {"for=unknown"}}, "10.1.2.3"},
		{"Forwarded obfuscated: the peer", "10.1.2.3:4711", map[string][]string{"Forwarded": {`for="_gazonk"`}}, "10.1.2.3"},
		{"Forwarded without for=: the peer", "10.1.2.3:4711", map[string][]string{"Forwarded": {"proto=https"}}, "10.1.2.3"},
		{"Forwarded unterminated quote: the peer", "10.1.2.3:4711", map[string][]string{"Forwarded": {`for="[2001:db8::1]`}}, "10.1.2.3"},
		{"Forwarded garbage: the peer", "10.1.2.3:4711", map[string][]string{"Forwarded": {"203.0.113.7"}}, "10.1.2.3"},
		{"Forwarded trailing junk: the peer", "10.1.2.3:4711", map[string][]string{"Forwarded": {"for=203.0.113.7 x"}}, "10.1.2.3"},
		{"Forwarded two for= in one element: the peer", "10.1.2.3:4711", map[string][]string{"Forwarded": {"for=203.0.113.7;for=1.1.1.1"}}, "10.1.2.3"},
		{"a trusted IPv6 peer", "[2001:db8:cafe::2]:443", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"an untrusted IPv6 peer", "[2001:db8:beef::2]:443", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "2001:db8:beef::2"},
		{"an IPv4-mapped peer", "[::ffff:10.1.2.3]:443", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"a peer that is no address", "pipe", map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "pipe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/mcp", nil)
			r.RemoteAddr = c.peer
			for k, vs := range c.header {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			if got := proxies.ClientAddr(r); got != c.want {
				t.Errorf("ClientAddr = %q, want %q", got, c.want)
			}
		})
	}
	t.Run("no proxies configured: always the peer", func(t *testing.T) {
		r := httptest.NewRequest("GET", "/mcp", nil)
		r.RemoteAddr = "10.1.2.3:4711"
		r.Header.Set("X-Forwarded-For", "203.0.113.7")
		if got := (mcpserver.TrustedProxies{}).ClientAddr(r); got != "10.1.2.3" {
			t.Errorf("ClientAddr = %q, want the peer", got)
		}
	})
}

func TestParseTrustedProxiesRefusesGarbage(t *testing.T) {
	for _, s := range []string{"10.0.0.0/33", "haproxy.internal", "10.0.0.1-10.0.0.9"} {
		if _, err := mcpserver.ParseTrustedProxies([]string{s}); err == nil {
			t.Errorf("%q was accepted", s)
		}
	}
}

// Behind a trusted proxy, the pre-auth limit counts each client on its own:
// one that exhausts its budget leaves another's intact, and a client
// cannot reset its budget by sending an address of its own.
func TestPreAuthLimitPerForwardedClient(t *testing.T) {
	l, err := ratelimit.NewLocal(2, time.Minute, ratelimit.WithClock(clockwork.NewFakeClock())) // no window ends mid-test
	if err != nil {
		t.Fatal(err)
	}
	proxies, _ := mcpserver.ParseTrustedProxies([]string{"10.0.0.1"})
	h := proxies.Handler(mcpserver.PreAuthLimit(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	status := func(xff string) int {
		r := httptest.NewRequest("GET", "/mcp", nil)
		r.RemoteAddr = "10.0.0.1:5000"
		r.Header.Set("X-Forwarded-For", xff)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	for i, want := range []int{200, 200, 429} {
		if got := status("203.0.113.7"); got != want {
			t.Fatalf("noisy request %d: %d, want %d", i, got, want)
		}
	}
	if got := status("1.2.3.4, 203.0.113.7"); got != 429 {
		t.Errorf("a spoofed entry reset the budget: %d", got)
	}
	if got := status("203.0.113.8"); got != 200 {
		t.Errorf("another client behind the same proxy: %d, want 200", got)
	}
}

// A load balancer at 10.0.0.1 names the client in X-Forwarded-For; a
// client that connects directly cannot pretend to be someone else.
func ExampleTrustedProxies_ClientAddr() {
	proxies, err := mcpserver.ParseTrustedProxies([]string{"10.0.0.1"})
	if err != nil {
		panic(err)
	}
	viaLB := httptest.NewRequest("POST", "/mcp", nil)
	viaLB.RemoteAddr = "10.0.0.1:40000"
	viaLB.Header.Set("X-Forwarded-For", "203.0.113.7")
	direct := httptest.NewRequest("POST", "/mcp", nil)
	direct.RemoteAddr = "198.51.100.9:50000"
	direct.Header.Set("X-Forwarded-For", "203.0.113.7")
	fmt.Println(proxies.ClientAddr(viaLB))
	fmt.Println(proxies.ClientAddr(direct))
	// Output:
	// 203.0.113.7
	// 198.51.100.9
}

// Handler goes in front of everything that needs the client's address:
// here the pre-auth limit, which then counts each client of the balancer
// on its own.
func ExampleTrustedProxies_Handler() {
	proxies, err := mcpserver.ParseTrustedProxies([]string{"10.0.0.0/24"})
	if err != nil {
		panic(err)
	}
	limiter, err := ratelimit.NewLocal(1, time.Hour)
	if err != nil {
		panic(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	h := proxies.Handler(mcpserver.PreAuthLimit(limiter, app))
	for _, client := range []string{"203.0.113.7", "203.0.113.7", "198.51.100.9"} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.RemoteAddr = "10.0.0.2:40000" // the balancer
		r.Header.Set("X-Forwarded-For", client)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(client, w.Code)
	}
	// Output:
	// 203.0.113.7 200
	// 203.0.113.7 429
	// 198.51.100.9 200
}

package mcpserver

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/parsemcp/parsemcp/internal/reqlog"
)

// TrustedProxies are the load balancers and reverse proxies whose
// forwarding headers (Forwarded, X-Forwarded-For) name the client of a
// request. The zero value trusts nobody: the client is the connection's
// peer.
type TrustedProxies struct{ nets []netip.Prefix }

// ParseTrustedProxies reads CIDRs ("10.0.0.0/8", "2001:db8::/32") and
// single addresses ("10.0.0.7", a /32 or /128), surrounding spaces and
// empty entries ignored.
func ParseTrustedProxies(list []string) (TrustedProxies, error) {
	var t TrustedProxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			t.nets = append(t.nets, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return TrustedProxies{}, fmt.Errorf("trusted proxy %q: not an IP address or CIDR", s)
		}
		a = a.Unmap().WithZone("")
		t.nets = append(t.nets, netip.PrefixFrom(a, a.BitLen()))
	}
	return t, nil
}

// trusts reports whether a is one of the proxies.
func (t TrustedProxies) trusts(a netip.Addr) bool {
	for _, p := range t.nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr is the one rule for the address of the client that sent r.
// When the connection's peer is a trusted proxy, the forwarding chain
// (RFC 7239 Forwarded "for=" if present, else X-Forwarded-For) is walked
// from the right, each trusted hop skipped, and the first untrusted
// address is the client (the leftmost one when every hop is trusted).
// Otherwise, and whenever the chain is malformed (an entry that is not an
// IP address, "unknown" and obfuscated names included), the client is the
// peer: a header from an untrusted peer is never believed, so a client
// cannot choose its own address. The address has no port.
//
// It decides accounting only (the pre-auth limit's bucket, audit events,
// log lines); no permission depends on it.
func (t TrustedProxies) ClientAddr(r *http.Request) string {
	peer, ok := peerAddr(r.RemoteAddr)
	if !ok {
		return r.RemoteAddr // not an IP peer (a pipe, a test): nothing to walk
	}
	if !t.trusts(peer) {
		return peer.String()
	}
	var chain []netip.Addr
	if fwd := r.Header.Values("Forwarded"); len(fwd) > 0 {
		chain, ok = forwardedFor(strings.Join(fwd, ","))
	} else if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
		chain, ok = forwardedList(strings.Join(xff, ","))
	}
	if !ok || len(chain) == 0 {
		return peer.String()
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if !t.trusts(chain[i]) {
			return chain[i].String()
		}
	}
	return chain[0].String()
}

// peerAddr parses a RemoteAddr ("ip:port", or a bare ip).
func peerAddr(remote string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	return hopAddr(remote)
}

// hopAddr parses one forwarded address: "ip", "ip:port", "[v6]" or
// "[v6]:port".
func hopAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return a.Unmap().WithZone(""), true
		}
	}
	return netip.Addr{}, false
}

// maxHops bounds the chain read from a header.
const maxHops = 64

// forwardedList parses X-Forwarded-For: addresses separated by commas.
func forwardedList(v string) ([]netip.Addr, bool) {
	parts := strings.Split(v, ",")
	if len(parts) > maxHops {
		return nil, false
	}
	chain := make([]netip.Addr, 0, len(parts))
	for _, p := range parts {
		a, ok := hopAddr(p)
		if !ok {
			return nil, false
		}
		chain = append(chain, a)
	}
	return chain, true
}

// forwardedFor parses RFC 7239 Forwarded: elements separated by commas,
// each a list of name=value pairs separated by semicolons, a value a token
// or a quoted string. It returns each element's for= address (an element
// without one is malformed here: the hop is unknown).
func forwardedFor(v string) ([]netip.Addr, bool) {
	var chain []netip.Addr
	for rest := v; ; {
		var addr netip.Addr
		found := false
		for { // one element's pairs
			rest = strings.TrimLeft(rest, " \t")
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 {
				return nil, false
			}
			name := strings.ToLower(strings.TrimSpace(rest[:eq]))
			var val string
			var ok bool
			val, rest, ok = forwardedValue(rest[eq+1:])
			if !ok {
				return nil, false
			}
			if name == "for" {
				if found {
					return nil, false
				}
				if addr, ok = hopAddr(val); !ok {
					return nil, false
				}
				found = true
			}
			rest = strings.TrimLeft(rest, " \t")
			if rest == "" || rest[0] == ',' {
				break
			}
			if rest[0] != ';' {
				return nil, false
			}
			rest = rest[1:]
		}
		if !found || len(chain) == maxHops {
			return nil, false
		}
		chain = append(chain, addr)
		if rest == "" {
			return chain, true
		}
		rest = rest[1:] // the comma
	}
}

// forwardedValue reads a token or a quoted string at the start of s and
// returns it and what follows.
func forwardedValue(s string) (val, rest string, ok bool) {
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch c := s[i]; c {
			case '\\':
				if i++; i == len(s) {
					return "", "", false
				}
				b.WriteByte(s[i])
			case '"':
				return b.String(), s[i+1:], true
			default:
				b.WriteByte(c)
			}
		}
		return "", "", false
	}
	end := strings.IndexAny(s, ";, \t")
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return "", "", false
	}
	return s[:end], s[end:], true
}

// Handler records each request's client address (ClientAddr) in its
// context for what follows: the pre-auth limit, audit events and log lines
// (client_addr). Put it in front of everything else.
func (t TrustedProxies) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(reqlog.WithClientAddr(r.Context(), t.ClientAddr(r))))
	})
}

// clientAddrOf is the client address TrustedProxies.Handler recorded for
// r, or its peer's when r did not pass through one (no proxy trusted).
func clientAddrOf(r *http.Request) string {
	if a := reqlog.ClientAddr(r.Context()); a != "" {
		return a
	}
	return TrustedProxies{}.ClientAddr(r)
}

// Package freeport finds TCP ports for the test servers a test starts
// itself (pgtest.Private, redistest.Private).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Get returns a TCP port free on 127.0.0.1, taken below the kernel's
// ephemeral range when it can: a port from that range may be given to an
// outgoing connection while the server is stopped, and then it could not
// listen there again.
func Get() (int, error) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				lo = n
			}
		}
	}
	if lo > 12000 {
		for range 100 {
			port := 10000 + rand.IntN(lo-10000)
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err == nil {
				ln.Close()
				return port, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("freeport: no free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Package haproxy runs HAProxy in front of two parsemcp instances, as
// docs/SCALING.md configures it: the load balancer of the scale-out tests
// and of bench/scaleout.
package haproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// ErrMissing says HAProxy is not installed.
var ErrMissing = errors.New("haproxy is not installed (apt-get install haproxy)")

// Find returns the haproxy binary (on PATH, or Debian's /usr/sbin).
func Find() (string, error) {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", ErrMissing
}

// config is docs/SCALING.md's configuration: sessions stick to the
// instance that created them (by Mcp-Session-Id), a dead instance is out
// of rotation within a health check, and X-Forwarded-For names the client.
const config = `global
  maxconn 4000
defaults
  mode http
  timeout connect 2s
  timeout client 120s
  timeout server 120s
  timeout tunnel 1h
  retries 2
  option redispatch
  option forwardfor
frontend mcp
  bind 127.0.0.1:%d
  default_backend serve
backend serve
  balance roundrobin
  stick-table type string len 128 size 100k expire 30m
  stick on req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
  server a %s check inter 300ms fall 1 rise 1
  server b %s check inter 300ms fall 1 rise 1
`

// Start runs bin with that configuration (written in dir) on 127.0.0.1:port
// in front of the instances at addresses a and b (HOST:PORT), and returns
// once it accepts connections (30 s at most: that bounds a hang only). The
// caller kills the process.
func Start(bin, dir string, port int, a, b string) (*exec.Cmd, error) {
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, port, a, b), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return cmd, nil
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, errors.New("haproxy did not listen on " + addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

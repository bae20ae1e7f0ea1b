// Package mqtttest starts the MQTT brokers tests use: a private Mosquitto
// (its own port, password file and ACL file, so tests may restart it
// without disturbing the shared broker on 1883) and the embedded mochi
// broker.
package mqtttest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/freeport"
)

// Mosquitto is a broker that belongs to one test.
type Mosquitto struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Config is a private Mosquitto's access control.
type Config struct {
	// Users maps user names to passwords; with none, anonymous clients
	// are allowed.
	Users map[string]string
	// ACL is the content of the ACL file (none: no ACL).
	ACL string
}

// FindMosquitto returns the mosquitto binary, or skips t (fails it under
// CI=true) when there is none.
func FindMosquitto(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"mosquitto", "/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if bin, err := exec.LookPath(p); err == nil {
			return bin
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI requires mosquitto for the federation tests (apt-get install mosquitto)")
	}
	t.Skip("no mosquitto binary (apt-get install mosquitto); skipping the Mosquitto federation tests")
	return ""
}

// StartMosquitto starts a private Mosquitto for t on a free loopback port,
// stopped when t ends.
func StartMosquitto(t testing.TB, c Config) *Mosquitto {
	t.Helper()
	m := &Mosquitto{t: t, bin: FindMosquitto(t), dir: t.TempDir()}
	var err error
	if m.port, err = freeport.Get(); err != nil {
		t.Fatal(err)
	}
	conf := []string{
		fmt.Sprintf("listener %d 127.0.0.1", m.port),
		"persistence false",
		"log_dest file " + filepath.Join(m.dir, "mosquitto.log"),
		"log_type error", "log_type warning", "log_type notice", "log_type information", "log_type subscribe", "log_type unsubscribe",
		"connection_messages true",
		"user root",
	}
	if len(c.Users) == 0 {
		conf = append(conf, "allow_anonymous true")
	} else {
		conf = append(conf, "allow_anonymous false", "password_file "+filepath.Join(m.dir, "passwd"))
		var pw strings.Builder
		for u, p := range c.Users {
			fmt.Fprintf(&pw, "%s:%s\n", u, p)
		}
		pwFile := filepath.Join(m.dir, "passwd")
		if err := os.WriteFile(pwFile, []byte(pw.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mosquitto_passwd", "-U", pwFile).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd -U: %v\n%s", err, out)
		}
	}
	if c.ACL != "" {
		if err := os.WriteFile(filepath.Join(m.dir, "acl"), []byte(c.ACL), 0o600); err != nil {
			t.Fatal(err)
		}
		conf = append(conf, "acl_file "+filepath.Join(m.dir, "acl"))
	}
	if err := os.WriteFile(filepath.Join(m.dir, "mosquitto.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.cmd != nil {
			_ = m.cmd.Process.Kill()
			<-m.done
			m.cmd = nil
		}
	})
	m.Start()
	return m
}

// URL is the broker's mqtt:// URL (the same after every Start).
func (m *Mosquitto) URL() string { return "mqtt://" + m.Addr() }

// Addr is HOST:PORT.
func (m *Mosquitto) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

// Start starts the broker and returns once it accepts connections.
func (m *Mosquitto) Start() {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		m.t.Fatal("mqtttest: Start of a running broker")
	}
	cmd := exec.Command(m.bin, "-c", filepath.Join(m.dir, "mosquitto.conf"))
	cmd.Dir = m.dir
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("mqtttest: start mosquitto: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	m.cmd, m.done = cmd, done
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", m.Addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			m.cmd = nil
			m.t.Fatalf("mqtttest: mosquitto exited at start (%v)\n%s", cmd.ProcessState, m.Log())
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("mqtttest: mosquitto does not accept connections: %v\n%s", err, m.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the broker (SIGTERM) and waits for it to exit.
func (m *Mosquitto) Stop() {
	m.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		m.t.Fatal("mqtttest: Stop of a stopped broker")
	}
	_ = m.cmd.Process.Signal(os.Interrupt)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd = nil
}

// Log returns the broker's log so far.
func (m *Mosquitto) Log() string {
	b, err := os.ReadFile(filepath.Join(m.dir, "mosquitto.log"))
	if err != nil {
		return "(no broker log: " + err.Error() + ")"
	}
	return string(b)
}

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
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/testproc"
)

// Mosquitto is a broker that belongs to one test: Start, Stop, Restart
// and Log come from testproc.Server.
type Mosquitto struct {
	*testproc.Server
	port int
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
	testproc.Unavailable(t, "no mosquitto binary (apt-get install mosquitto) for the Mosquitto federation tests")
	return ""
}

// StartMosquitto starts a private Mosquitto for t on a free loopback port,
// stopped when t ends.
func StartMosquitto(t testing.TB, c Config) *Mosquitto {
	t.Helper()
	bin, dir := FindMosquitto(t), t.TempDir()
	m := &Mosquitto{}
	var err error
	if m.port, err = freeport.Get(); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "mosquitto.log")
	conf := []string{
		fmt.Sprintf("listener %d 127.0.0.1", m.port),
		"persistence false",
		"log_dest file " + logFile,
		"log_type error", "log_type warning", "log_type notice", "log_type information", "log_type subscribe", "log_type unsubscribe",
		"connection_messages true",
		"user root",
	}
	if len(c.Users) == 0 {
		conf = append(conf, "allow_anonymous true")
	} else {
		conf = append(conf, "allow_anonymous false", "password_file "+filepath.Join(dir, "passwd"))
		var pw strings.Builder
		for u, p := range c.Users {
			fmt.Fprintf(&pw, "%s:%s\n", u, p)
		}
		pwFile := filepath.Join(dir, "passwd")
		if err := os.WriteFile(pwFile, []byte(pw.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mosquitto_passwd", "-U", pwFile).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd -U: %v\n%s", err, out)
		}
	}
	if c.ACL != "" {
		if err := os.WriteFile(filepath.Join(dir, "acl"), []byte(c.ACL), 0o600); err != nil {
			t.Fatal(err)
		}
		conf = append(conf, "acl_file "+filepath.Join(dir, "acl"))
	}
	if err := os.WriteFile(filepath.Join(dir, "mosquitto.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.Server = testproc.Start(t, testproc.Options{
		Name: "mosquitto",
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin, "-c", filepath.Join(dir, "mosquitto.conf"))
			cmd.Dir = dir
			return cmd
		},
		Ready: func() error {
			c, err := net.DialTimeout("tcp", m.Addr(), time.Second)
			if err == nil {
				c.Close()
			}
			return err
		},
		LogFile: logFile,
	})
	return m
}

// URL is the broker's mqtt:// URL (the same after every Start).
func (m *Mosquitto) URL() string { return "mqtt://" + m.Addr() }

// Addr is HOST:PORT.
func (m *Mosquitto) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

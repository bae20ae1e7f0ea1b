package federation

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/federation/broker"
	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/mqtttest"
)

const cannotConnect = "cannot connect to the broker"

// TestConnectFailureLoggedOnce: a broker that cannot be reached is one
// ERROR with the reason, the retries failing alike are DEBUG; Health
// says why until the broker comes, then the connection is INFO.
func TestConnectFailureLoggedOnce(t *testing.T) {
	port, err := freeport.Get()
	must(t, err)
	logs := newLogRecorder()
	p, err := Connect(context.Background(), Options{ConnOptions: ConnOptions{Broker: fmt.Sprintf("mqtt://127.0.0.1:%d", port), Logger: slog.New(logs)}})
	must(t, err)
	t.Cleanup(p.Close)
	logs.wait(t, "three failed attempts", func() bool { return logs.count(slog.LevelDebug, cannotConnect) >= 3 })
	if n := logs.count(slog.LevelError, cannotConnect); n != 1 {
		t.Fatalf("%d ERROR lines for one reason", n)
	}
	if r := logs.attr(slog.LevelError, cannotConnect, "reason"); r != "cannot reach the broker: connect: connection refused" {
		t.Fatalf("reason %q", r)
	}
	if err := p.Health(); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("health while the broker is down: %v", err)
	}
	b, err := broker.Start(broker.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	must(t, err)
	t.Cleanup(func() { b.Close() })
	must(t, p.Ready(bound(t)))
	if err := p.Health(); err != nil {
		t.Fatalf("health once connected: %v", err)
	}
	if n := logs.count(slog.LevelInfo, "connected to the broker"); n != 1 {
		t.Fatalf("%d INFO lines for the connection", n)
	}
}

// TestBadCredentialsLoggedOnce: a wrong password is one ERROR naming the
// broker's refusal, for the platform and for an agent alike.
func TestBadCredentialsLoggedOnce(t *testing.T) {
	m := mqtttest.StartMosquitto(t, mqtttest.Config{Users: map[string]string{"platform": "pw-platform", "agent-d1": "pw-d1"}})
	check := func(who string, logs *logRecorder) {
		t.Helper()
		logs.wait(t, who+"'s second failed attempt", func() bool { return logs.count(slog.LevelDebug, cannotConnect) >= 1 })
		if n := logs.count(slog.LevelError, cannotConnect); n != 1 {
			t.Fatalf("%s: %d ERROR lines for one reason", who, n)
		}
		r := logs.attr(slog.LevelError, cannotConnect, "reason")
		t.Logf("%s: %s", who, r)
		if !strings.HasPrefix(r, "the broker refused the connection: ") || !strings.Contains(r, "(reason code 13") || !strings.Contains(r, "check the user name and password") {
			t.Fatalf("%s: reason %q", who, r)
		}
	}
	plogs := newLogRecorder()
	p, err := Connect(context.Background(), Options{ConnOptions: ConnOptions{Broker: m.URL(), Username: "platform", Password: "wrong", Logger: slog.New(plogs)}})
	must(t, err)
	t.Cleanup(p.Close)
	check("the platform", plogs)
	if err := p.Health(); err == nil || !strings.Contains(err.Error(), "the broker refused the connection") {
		t.Fatalf("health: %v", err)
	}

	alogs := newLogRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeAgent(ctx, AgentOptions{ConnOptions: ConnOptions{Broker: m.URL(), Username: "agent-d1", Password: "wrong", Logger: slog.New(alogs)}, Entity: d1}, echoTools(t))
	}()
	check("the agent", alogs)
	cancel()
	<-done
}

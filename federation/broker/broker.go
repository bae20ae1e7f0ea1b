// Package broker is the embedded MQTT broker (mochi-mqtt) for zero-setup
// federation: `parsemcp serve --federation embedded` runs one on a
// loopback port of its own, and agents on the same machine connect to it.
// It accepts every client, so it listens on loopback only; a deployment
// across machines uses a real broker with credentials and an ACL
// (docs/FEDERATION.md).
package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// DefaultAddr is where the embedded broker listens by default: loopback,
// away from 1883, which a real broker usually holds.
const DefaultAddr = "127.0.0.1:18830"

// Broker is a running embedded broker.
type Broker struct {
	srv *mqtt.Server
	tcp *listeners.TCP
}

// Options configures Start.
type Options struct {
	// Addr is the listen address (default DefaultAddr; port 0 picks one).
	Addr   string
	Logger *slog.Logger
	// Hooks are added to the broker before it serves (tests observe
	// subscriptions through them).
	Hooks []mqtt.Hook
}

// Start starts a broker listening on o.Addr, which must be a loopback
// address.
func Start(o Options) (*Broker, error) {
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker address %q: %w", o.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("embedded broker address %q: the embedded broker accepts every client, so it listens on loopback only; use a real broker with an ACL to reach other machines", o.Addr)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	caps := mqtt.NewDefaultServerCapabilities()
	srv := mqtt.New(&mqtt.Options{Logger: o.Logger, Capabilities: caps, InlineClient: false})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, err
	}
	for _, h := range o.Hooks {
		if err := srv.AddHook(h, nil); err != nil {
			return nil, err
		}
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "parsemcp", Address: o.Addr})
	if err := srv.AddListener(tcp); err != nil {
		return nil, fmt.Errorf("embedded broker: listen on %s: %w", o.Addr, err)
	}
	go func() {
		if err := srv.Serve(); err != nil {
			o.Logger.Error("embedded broker stopped", "err", err)
		}
	}()
	return &Broker{srv: srv, tcp: tcp}, nil
}

// Addr is the address the broker listens on (HOST:PORT).
func (b *Broker) Addr() string { return b.tcp.Address() }

// URL is the broker's mqtt:// URL.
func (b *Broker) URL() string { return "mqtt://" + b.Addr() }

// Close stops the broker and disconnects its clients.
//
// mochi-mqtt (v2.7.9) closes a listener's clients by listing them with
// Clients.GetByListener, which takes the clients' read lock and, inside
// it, takes it again (Clients.Len). A client leaving at that moment
// queues for the write lock (Clients.Delete) between the two, and the
// second read lock then waits for it for ever: Server.Close never
// returns. So the listener is closed here first, its clients listed from
// one copy of the map (Clients.GetAll, one read lock) and disconnected;
// Server.Close then finds the listener closed and does not list them
// again.
func (b *Broker) Close() error {
	b.tcp.Close(func(listener string) {
		for _, cl := range b.srv.Clients.GetAll() {
			if cl.Net.Listener == listener && !cl.Closed() {
				_ = b.srv.DisconnectClient(cl, packets.ErrServerShuttingDown)
			}
		}
	})
	return b.srv.Close()
}

// Disconnect drops a client's connection as a network failure would (its
// will message is published); it reports whether the client was
// connected.
func (b *Broker) Disconnect(clientID string) bool {
	cl, ok := b.srv.Clients.Get(clientID)
	if !ok || cl.Closed() {
		return false
	}
	// Closing the socket is what a network failure does: the client's read
	// fails, so the broker publishes its will. (Stopping the client instead
	// lets its read loop see it closed and end quietly, without the will,
	// when it gets there first.)
	if cl.Net.Conn != nil {
		_ = cl.Net.Conn.Close()
		return true
	}
	cl.Stop(errors.New("disconnected by the embedded broker"))
	return true
}

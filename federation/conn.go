package federation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"
)

// ErrUnavailable is returned when the broker or the agent cannot be reached.
var ErrUnavailable = errors.New("unavailable")

// ConnOptions are the broker connection settings shared by the platform
// and the agents.
type ConnOptions struct {
	// Broker is the broker URL: mqtt://HOST:PORT (or tcp://), mqtts:// or
	// tls:// for TLS, ws:// or wss://.
	Broker string
	// ClientID is the MQTT client id (default: a random one).
	ClientID string
	// Username and Password authenticate the client to the broker.
	Username string
	Password string
	// Prefix and Platform name the topics (Topics).
	Prefix   string
	Platform string
	// MaxPayload bounds every payload sent or accepted (default
	// DefaultMaxPayload).
	MaxPayload int
	Logger     *slog.Logger
}

func (o *ConnOptions) defaults(role string) error {
	if o.Broker == "" {
		return errors.New("federation: no broker URL")
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.Platform == "" {
		o.Platform = "parsemcp"
	}
	if o.MaxPayload <= 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ClientID == "" {
		o.ClientID = role + "-" + newID()[:12]
	}
	return nil
}

func (o *ConnOptions) topics() Topics { return Topics{Prefix: o.Prefix, Platform: o.Platform} }

// conn is one long-lived broker connection (autopaho reconnects it). The
// subscriptions it holds are made again after every reconnection, since
// its sessions are not persistent.
type conn struct {
	cm  *autopaho.ConnectionManager
	log *slog.Logger

	mu      sync.Mutex
	subs    map[string]bool // topic filters held, subscribed again on reconnect
	up      bool
	failure string        // why the last connection attempt failed ("" once one succeeded)
	down    chan struct{} // closed when the current connection drops
	ready   chan struct{} // closed once a connection is up and its subscriptions are made again
	gen     int           // counts connections, so a late goroutine of an old one does nothing
}

// connHooks are the callbacks of a conn.
type connHooks struct {
	// onMessage handles an incoming message; it must not block for long.
	onMessage func(*paho.Publish)
	// onUp runs (in its own goroutine) after each (re)connection, once
	// the held subscriptions are made again.
	onUp func(ctx context.Context)
	// onDown runs when the connection drops.
	onDown func()
	will   *paho.WillMessage
}

func brokerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("federation: broker %q: want mqtt://HOST:PORT", s)
	}
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp":
		u.Scheme = "mqtt"
	case "mqtts", "ssl", "tls":
		u.Scheme = "tls"
	case "ws", "wss":
	default:
		return nil, fmt.Errorf("federation: broker %q: unknown scheme %q (use mqtt://, mqtts://, ws:// or wss://)", s, u.Scheme)
	}
	if u.Port() == "" {
		port := "1883"
		if u.Scheme == "tls" {
			port = "8883"
		}
		u.Host += ":" + port
	}
	return u, nil
}

// dial starts the connection manager; it returns at once and connects in
// the background (retrying with backoff).
func dial(ctx context.Context, o *ConnOptions, h connHooks) (*conn, error) {
	u, err := brokerURL(o.Broker)
	if err != nil {
		return nil, err
	}
	c := &conn{log: o.Logger, subs: map[string]bool{}, down: make(chan struct{}), ready: make(chan struct{})}
	cfg := autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     20,
		CleanStartOnInitialConnection: true,
		ConnectTimeout:                10 * time.Second,
		ReconnectBackoff:              autopaho.NewExponentialBackoff(50*time.Millisecond, 5*time.Second, 250*time.Millisecond, 2),
		ConnectUsername:               o.Username,
		ConnectPassword:               []byte(o.Password),
		WillMessage:                   h.will,
		OnConnectionUp: func(cm *autopaho.ConnectionManager, _ *paho.Connack) {
			c.mu.Lock()
			c.up = true
			c.down = make(chan struct{})
			c.gen++
			gen := c.gen
			filters := make([]string, 0, len(c.subs))
			for f := range c.subs {
				filters = append(filters, f)
			}
			c.failure = ""
			c.mu.Unlock()
			o.Logger.Info("federation: connected to the broker", "broker", u.Redacted(), "client_id", o.ClientID)
			go func() {
				if len(filters) > 0 {
					sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					err := c.brokerSubscribe(sctx, filters...)
					cancel()
					if err != nil {
						o.Logger.Warn("federation: subscribing again after reconnect failed", "err", err)
					}
				}
				c.mu.Lock()
				if c.gen == gen && c.up {
					select {
					case <-c.ready:
					default:
						close(c.ready)
					}
				}
				c.mu.Unlock()
				if h.onUp != nil {
					h.onUp(ctx)
				}
			}()
		},
		OnConnectionDown: func() bool {
			c.mu.Lock()
			if c.up {
				c.up = false
				close(c.down)
				select {
				case <-c.ready:
					c.ready = make(chan struct{})
				default:
				}
			}
			c.mu.Unlock()
			o.Logger.Warn("federation: connection to the broker lost; reconnecting", "broker", u.Redacted())
			if h.onDown != nil {
				h.onDown()
			}
			return true
		},
		OnConnectError: func(err error) {
			// The first failure and each new reason are errors; the
			// retries that fail alike are logged at DEBUG.
			reason := connectFailure(err)
			c.mu.Lock()
			again := reason == c.failure
			c.failure = reason
			c.mu.Unlock()
			level := slog.LevelError
			if again {
				level = slog.LevelDebug
			}
			o.Logger.Log(ctx, level, "federation: cannot connect to the broker; retrying", "broker", u.Redacted(), "reason", reason)
		},
		ClientConfig: paho.ClientConfig{
			ClientID: o.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){func(pr paho.PublishReceived) (bool, error) {
				h.onMessage(pr.Packet)
				return true, nil
			}},
		},
	}
	if o.Username == "" {
		cfg.ConnectPassword = nil
	}
	cm, err := autopaho.NewConnection(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c.cm = cm
	return c, nil
}

// connectFailure says why a connection attempt failed, in a few words
// that name neither the broker's address nor a credential.
func connectFailure(err error) string {
	var refused *autopaho.ConnackError
	if errors.As(err, &refused) {
		what, _, _ := strings.Cut((&packets.Connack{ReasonCode: refused.ReasonCode}).Reason(), " - ")
		if what == "" {
			what = "refused"
		}
		hint := ""
		if refused.ReasonCode == packets.ConnackBadUsernameOrPassword || refused.ReasonCode == packets.ConnackNotAuthorized {
			hint = "; check the user name and password"
		}
		return fmt.Sprintf("the broker refused the connection: %s (reason code %d)%s", strings.ToLower(what), refused.ReasonCode, hint)
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return "cannot reach the broker: " + sys.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return "cannot reach the broker: " + op.Err.Error()
	}
	return err.Error()
}

// health says why the connection is not up ("" when it is).
func (c *conn) health() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.up:
		return ""
	case c.failure != "":
		return c.failure
	}
	return "connecting to the broker"
}

// connected returns whether the connection is up and a channel closed
// when it drops.
func (c *conn) state() (up bool, down <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up, c.down
}

// await waits until the connection is up with its subscriptions made
// again (or ctx ends).
func (c *conn) await(ctx context.Context) error {
	c.mu.Lock()
	ready := c.ready
	c.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: no connection to the broker: %v", ErrUnavailable, ctx.Err())
	case <-c.cm.Done():
		return fmt.Errorf("%w: the broker connection is closed", ErrUnavailable)
	}
}

// brokerSubscribe subscribes to filters at QoS 0, so the broker sends
// this client nothing that carries a packet identifier. QoS 1 deliveries
// would gain nothing (sessions are not persistent: what is in flight
// when a connection drops is lost either way; presence is retained and
// sent again on every subscription), and the embedded broker (mochi-mqtt)
// keeps the identifiers of its own unacknowledged deliveries and of the
// client's requests in one table: a SUBSCRIBE whose identifier matched a
// retained presence message still in flight was refused with "packet
// identifier in use", leaving agents out of the catalog after a restart.
func (c *conn) brokerSubscribe(ctx context.Context, filters ...string) error {
	opts := make([]paho.SubscribeOptions, len(filters))
	for i, f := range filters {
		opts[i] = paho.SubscribeOptions{Topic: f, QoS: 0, NoLocal: true}
	}
	ack, err := c.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: opts})
	if err != nil {
		return fmt.Errorf("%w: subscribe: %v", ErrUnavailable, err)
	}
	for i, rc := range ack.Reasons {
		if rc >= 0x80 {
			return fmt.Errorf("%w: the broker refused the subscription to %s (reason code 0x%02x; check its ACL)", ErrUnavailable, filters[min(i, len(filters)-1)], rc)
		}
	}
	return nil
}

// subscribe subscribes to filter and keeps it across reconnections.
func (c *conn) subscribe(ctx context.Context, filter string) error {
	if err := c.await(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.subs[filter] = true
	c.mu.Unlock()
	if err := c.brokerSubscribe(ctx, filter); err != nil {
		c.mu.Lock()
		delete(c.subs, filter)
		c.mu.Unlock()
		return err
	}
	return nil
}

// unsubscribe drops filter.
func (c *conn) unsubscribe(ctx context.Context, filter string) error {
	c.mu.Lock()
	delete(c.subs, filter)
	up := c.up
	c.mu.Unlock()
	if !up {
		return nil // the broker forgot it with the connection
	}
	_, err := c.cm.Unsubscribe(ctx, &paho.Unsubscribe{Topics: []string{filter}})
	return err
}

// publish sends p (at QoS 1 it waits for the broker's acknowledgement).
// Requests and responses travel at QoS 0: the call has its own
// correlation, timeout and connection-loss detection, and an
// acknowledgement per message would meet Nagle's algorithm on brokers
// that leave it on (Mosquitto's default), adding tens of milliseconds.
func (c *conn) publish(ctx context.Context, p *paho.Publish) error {
	if err := c.await(ctx); err != nil {
		return err
	}
	if _, err := c.cm.Publish(ctx, p); err != nil {
		return fmt.Errorf("%w: publish: %v", ErrUnavailable, err)
	}
	return nil
}

// close disconnects cleanly.
func (c *conn) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.cm.Disconnect(ctx)
}

package subscribe

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Tunables of the Redis subscriber; variables so tests can shorten them.
var (
	// redisHealthInterval: after this long without traffic the subscriber
	// pings; without any reply one more interval later it reconnects.
	redisHealthInterval = 15 * time.Second
	redisMinBackoff     = 50 * time.Millisecond
	redisMaxBackoff     = 5 * time.Second
	// redisPonged, when set, is called for each health-check reply.
	redisPonged func()
)

// frameVersion is the first byte of every message on the channel.
const frameVersion = 1

// Redis is a Notifier over Redis pub/sub (NewRedis).
type Redis struct {
	client  redis.UniversalClient
	channel string
	log     *slog.Logger
	origin  string // this instance's id, in every frame it publishes

	ls     listeners
	closed atomic.Bool

	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	ps     *redis.PubSub // the current subscription, for Close

	ready     chan struct{}
	readyOnce sync.Once
	done      chan struct{}
	closeOnce sync.Once
}

// NewRedis returns a Notifier that fans messages out over the Redis pub/sub
// channel to every instance subscribed to it, and starts its subscriber
// goroutine (Close stops it). client may be a single-node, sentinel or
// cluster client; log may be nil (slog.Default).
//
// Own messages: Publish calls this instance's listeners directly (so they
// get the message even when Redis is down, and without a round trip), then
// publishes a frame tagged with this instance's random id; the subscriber
// skips frames carrying its own id. Each instance, the publisher included,
// thus sees a message exactly once.
//
// Gaps: the subscriber reconnects with jittered exponential backoff (50 ms
// to 5 s) whenever the connection fails or stops answering health-check
// pings. Pub/sub does not replay what was published meanwhile, so once the
// subscription is re-established it calls the listeners with
// Message{ID: ResyncID}. The same happens when the first subscription only
// succeeds after failed attempts. WaitReady waits for the first
// subscription.
//
// Frame: byte 1, uvarint length + origin id, uvarint length + message ID,
// then the payload. Malformed frames are logged and dropped.
func NewRedis(client redis.UniversalClient, channel string, log *slog.Logger) Notifier {
	return newRedis(client, channel, log)
}

func newRedis(client redis.UniversalClient, channel string, log *slog.Logger) *Redis {
	if client == nil {
		panic("subscribe: NewRedis with a nil client")
	}
	if log == nil {
		log = slog.Default()
	}
	var b [8]byte
	_, _ = crand.Read(b[:])
	ctx, cancel := context.WithCancel(context.Background())
	r := &Redis{
		client:  client,
		channel: channel,
		origin:  hex.EncodeToString(b[:]),
		ctx:     ctx,
		cancel:  cancel,
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	r.log = log.With("component", "subscribe.redis", "channel", channel, "instance", r.origin)
	go r.run()
	return r
}

// Ready is closed once the first subscription is confirmed (see WaitReady).
func (r *Redis) Ready() <-chan struct{} { return r.ready }

// Publish delivers m to this instance's listeners, then publishes it on the
// channel for the other instances. The error is Redis's (the local
// listeners have been called regardless), ErrClosed, or ctx's error when
// ctx is already done (then nobody gets m).
func (r *Redis) Publish(ctx context.Context, m Message) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.ls.deliver(m)
	if err := r.client.Publish(ctx, r.channel, encodeFrame(r.origin, m)).Err(); err != nil {
		return fmt.Errorf("subscribe: publish on Redis channel %q: %w", r.channel, err)
	}
	return nil
}

// Listen registers fn; cancel unregisters it.
func (r *Redis) Listen(fn func(Message)) (cancel func()) { return r.ls.add(fn) }

// Close stops the subscriber and waits for it. It does not close client.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		r.cancel()
		r.mu.Lock()
		if r.ps != nil {
			_ = r.ps.Close() // unblocks a pending receive
		}
		r.mu.Unlock()
	})
	<-r.done
	return nil
}

func (r *Redis) run() {
	defer close(r.done)
	gap := false // a subscription attempt has ended: the next confirmation resyncs
	backoff := redisMinBackoff
	lastErr := "" // of the previous failed attempt: a repeat is logged at debug level
	for r.ctx.Err() == nil {
		subscribed, err := r.subscribeOnce(gap)
		if r.ctx.Err() != nil {
			return
		}
		gap = true
		if subscribed {
			backoff = redisMinBackoff
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		msg := fmt.Sprint(err)
		if subscribed || msg != lastErr {
			r.log.Warn("Redis subscription failed; retrying", "err", err, "retry_in", wait)
		} else {
			r.log.Debug("Redis subscription failed again; retrying", "err", err, "retry_in", wait)
		}
		lastErr = msg
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(backoff*2, redisMaxBackoff)
	}
}

// subscribeOnce runs one subscription until it fails; subscribed reports
// whether it was confirmed. When resync is set, a confirmation delivers a
// ResyncID message.
func (r *Redis) subscribeOnce(resync bool) (subscribed bool, err error) {
	ps := r.client.Subscribe(r.ctx, r.channel)
	r.mu.Lock()
	if r.ctx.Err() != nil { // Close ran before ps was visible to it
		r.mu.Unlock()
		_ = ps.Close()
		return false, nil
	}
	r.ps = ps
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.ps = nil
		r.mu.Unlock()
		_ = ps.Close()
	}()

	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(r.ctx, redisHealthInterval)
		if err != nil {
			if r.ctx.Err() != nil {
				return subscribed, nil
			}
			if isTimeout(err) {
				if pinged {
					return subscribed, errors.New("no reply to the health-check ping")
				}
				if err := ps.Ping(r.ctx); err != nil {
					return subscribed, fmt.Errorf("health-check ping: %w", err)
				}
				pinged = true
				continue
			}
			return subscribed, err
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == r.channel && !subscribed {
				subscribed = true
				r.readyOnce.Do(func() { close(r.ready) })
				if resync {
					r.log.Info("Redis subscription re-established; resyncing")
					r.ls.deliver(Message{ID: ResyncID})
				}
			}
		case *redis.Message:
			r.receive(m.Payload)
		case *redis.Pong:
			if redisPonged != nil {
				redisPonged()
			}
		}
	}
}

func (r *Redis) receive(frame string) {
	origin, m, err := decodeFrame(frame)
	if err != nil {
		r.log.Warn("dropping a malformed message", "err", err, "bytes", len(frame))
		return
	}
	if origin == r.origin {
		return // delivered locally by Publish
	}
	r.ls.deliver(m)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func encodeFrame(origin string, m Message) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(origin)+len(m.ID)+len(m.Payload))
	b = append(b, frameVersion)
	b = binary.AppendUvarint(b, uint64(len(origin)))
	b = append(b, origin...)
	b = binary.AppendUvarint(b, uint64(len(m.ID)))
	b = append(b, m.ID...)
	return append(b, m.Payload...)
}

var errBadFrame = errors.New("bad frame")

func decodeFrame(s string) (origin string, m Message, err error) {
	if len(s) == 0 || s[0] != frameVersion {
		return "", m, fmt.Errorf("%w: unknown version", errBadFrame)
	}
	s = s[1:]
	field := func() (string, bool) {
		n, k := binary.Uvarint([]byte(s[:min(len(s), binary.MaxVarintLen64)]))
		if k <= 0 || n > uint64(len(s)-k) {
			return "", false
		}
		f := s[k : k+int(n)]
		s = s[k+int(n):]
		return f, true
	}
	var ok bool
	if origin, ok = field(); !ok {
		return "", m, fmt.Errorf("%w: origin", errBadFrame)
	}
	if m.ID, ok = field(); !ok {
		return "", m, fmt.Errorf("%w: id", errBadFrame)
	}
	m.ID = strings.Clone(m.ID) // a Dedup may keep it: do not pin the frame
	m.Payload = []byte(s)
	return origin, m, nil
}

// Ping reports whether Redis answers now (for /health).
func (r *Redis) Ping(ctx context.Context) error { return r.client.Ping(ctx).Err() }

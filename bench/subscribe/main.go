// Command subscribe measures the resource-subscription path of package
// subscribe end to end: change events published on one server instance
// (A) travel through the Notifier to another (B), which looks the URI up
// in its Index, debounces per (session, URI) and "notifies" (records the
// time; the MCP send itself is not included). It reports, for the same
// events in the same run:
//
//   - transport: publish on A → listener on B (the baseline: Redis pub/sub
//     or the in-process notifier);
//   - notification: the oldest event a notification covers → the
//     notification, i.e. the worst latency of every notification;
//
// and checks the target p99(notification) ≤ window + 50 ms. It also prints
// the index's memory per subscription.
//
//	go run ./bench/subscribe                          # 10,000 sessions, Redis at 127.0.0.1:6379
//	go run ./bench/subscribe -redis ''                # in-process notifier
//	go run ./bench/subscribe -sessions 50000 -rate 500 -duration 20s
//
// Redis: -redis, else $PARSEMCP_BENCH_REDIS, else $PARSEMCP_TEST_REDIS,
// else 127.0.0.1:6379; the run uses a random channel.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parsemcp/parsemcp/subscribe"
)

func main() {
	var (
		sessions = flag.Int("sessions", 10_000, "sessions, each subscribed to one URI")
		uris     = flag.Int("uris", 100, "distinct URIs (parse://ClassNNN/count); each event fans out to sessions/uris sessions")
		window   = flag.Duration("window", subscribe.DefaultWindow, "debounce window")
		rate     = flag.Int("rate", 200, "change events published per second on instance A (random URI each)")
		duration = flag.Duration("duration", 10*time.Second, "measured publishing time")
		warmup   = flag.Duration("warmup", time.Second, "unrecorded publishing time first")
		slackMS  = flag.Int("slack-ms", 50, "target: p99 notification latency ≤ window + slack")
		addr     = flag.String("redis", defaultRedis(), "Redis address (empty: the in-process notifier); env PARSEMCP_BENCH_REDIS, PARSEMCP_TEST_REDIS")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, config{
		sessions: *sessions, uris: max(*uris, 1), window: *window, rate: max(*rate, 1),
		duration: *duration, warmup: *warmup, slack: time.Duration(*slackMS) * time.Millisecond, redis: *addr,
	}); err != nil {
		fmt.Fprintln(os.Stderr, "subscribe:", err)
		os.Exit(1)
	}
}

func defaultRedis() string {
	for _, k := range []string{"PARSEMCP_BENCH_REDIS", "PARSEMCP_TEST_REDIS"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "127.0.0.1:6379"
}

type config struct {
	sessions, uris, rate    int
	window, duration, slack time.Duration
	warmup                  time.Duration
	redis                   string
}

// recorder collects latencies once recording is on.
type recorder struct {
	on        atomic.Bool
	mu        sync.Mutex
	transport []time.Duration
	notify    []time.Duration
}

func (r *recorder) add(dst *[]time.Duration, d time.Duration) {
	if !r.on.Load() {
		return
	}
	r.mu.Lock()
	*dst = append(*dst, d)
	r.mu.Unlock()
}

func run(ctx context.Context, cfg config) error {
	fmt.Printf("machine: %d CPUs, %s/%s, %s\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())

	// Instance B's index: session i subscribes to URI i mod uris.
	uriNames := make([]string, cfg.uris)
	for i := range uriNames {
		uriNames[i] = fmt.Sprintf("parse://Class%03d/count", i)
	}
	ids := make([]string, cfg.sessions)
	for i := range ids {
		ids[i] = fmt.Sprintf("S%025d", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	idx := subscribe.NewIndex(subscribe.Limits{PerSession: -1, Sessions: -1})
	for i, id := range ids {
		if err := idx.Subscribe(id, uriNames[i%cfg.uris]); err != nil {
			return err
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perSub := float64(after.HeapAlloc-before.HeapAlloc) / float64(cfg.sessions)

	// The notifiers.
	var a, b subscribe.Notifier
	transport := "in-process (NewLocal)"
	if cfg.redis == "" {
		a = subscribe.NewLocal()
		b = a
	} else {
		client := redis.NewClient(&redis.Options{Addr: cfg.redis})
		defer client.Close()
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := client.Ping(pctx).Err()
		cancel()
		if err != nil {
			return fmt.Errorf("Redis at %s: %w (use -redis '' for the in-process notifier)", cfg.redis, err)
		}
		var rb [6]byte
		_, _ = rand.Read(rb[:])
		channel := "parsemcp-bench-subscribe-" + hex.EncodeToString(rb[:])
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		a = subscribe.NewRedis(client, channel, quiet)
		b = subscribe.NewRedis(client, channel, quiet)
		transport = "Redis pub/sub at " + cfg.redis
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		for _, n := range []subscribe.Notifier{a, b} {
			if err := subscribe.WaitReady(wctx, n); err != nil {
				return fmt.Errorf("notifier not subscribed: %w", err)
			}
		}
	}
	defer a.Close()
	defer b.Close()

	// Instance B: dedup → index → debouncer → "notify".
	var rec recorder
	var fires, triggers atomic.Int64
	var firstMu sync.Mutex
	first := make(map[string]time.Time, cfg.sessions) // key → oldest event not yet notified
	d := subscribe.NewDebouncer(cfg.window, func(key string) {
		now := time.Now()
		firstMu.Lock()
		t0, ok := first[key]
		delete(first, key)
		firstMu.Unlock()
		if ok {
			rec.add(&rec.notify, now.Sub(t0))
		}
		fires.Add(1)
	})
	defer d.Close()
	dedup := subscribe.NewDedup(0)
	stopListen := b.Listen(func(m subscribe.Message) {
		now := time.Now()
		if dedup.Seen(m.ID) || len(m.Payload) < 8 {
			return
		}
		sent := time.Unix(0, int64(binary.BigEndian.Uint64(m.Payload)))
		rec.add(&rec.transport, now.Sub(sent))
		uri := string(m.Payload[8:])
		ss := idx.Sessions(uri)
		firstMu.Lock()
		for _, s := range ss {
			k := subscribe.Key(s, uri)
			if _, ok := first[k]; !ok {
				first[k] = sent
			}
		}
		firstMu.Unlock()
		for _, s := range ss {
			d.Trigger(subscribe.Key(s, uri))
		}
		triggers.Add(int64(len(ss)))
	})
	defer stopListen()

	fmt.Printf("transport: %s; %d sessions × 1 URI over %d URIs (%d sessions per event); window %v; %d events/s for %v (+%v warm-up)\n",
		transport, cfg.sessions, cfg.uris, cfg.sessions/cfg.uris, cfg.window, cfg.rate, cfg.duration, cfg.warmup)

	// Instance A publishes.
	var seq int
	publish := func(until time.Time) error {
		tick := time.NewTicker(time.Second / time.Duration(cfg.rate))
		defer tick.Stop()
		for time.Now().Before(until) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			uri := uriNames[mrand.IntN(cfg.uris)]
			p := make([]byte, 8, 8+len(uri))
			binary.BigEndian.PutUint64(p, uint64(time.Now().UnixNano()))
			p = append(p, uri...)
			seq++
			if err := a.Publish(ctx, subscribe.Message{ID: fmt.Sprint("ev-", seq), Payload: p}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := publish(time.Now().Add(cfg.warmup)); err != nil {
		return err
	}
	rec.on.Store(true)
	f0, t0, start := fires.Load(), triggers.Load(), time.Now()
	if err := publish(start.Add(cfg.duration)); err != nil {
		return err
	}
	// Drain: every armed key fires within one window.
	deadline := time.Now().Add(cfg.window + 2*time.Second)
	for d.Pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	rec.on.Store(false)
	nFires, nTrig := fires.Load()-f0, triggers.Load()-t0

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.notify) == 0 {
		return fmt.Errorf("no notification recorded")
	}
	tr, nt := summarize(rec.transport), summarize(rec.notify)
	fmt.Printf("\n%-34s %10s %10s %10s %10s\n", "latency (same events, same run)", "n", "p50", "p99", "max")
	fmt.Printf("%-34s %10d %10s %10s %10s\n", "transport A → B (baseline)", tr.n, ms(tr.p50), ms(tr.p99), ms(tr.max))
	fmt.Printf("%-34s %10d %10s %10s %10s\n", "event → notification", nt.n, ms(nt.p50), ms(nt.p99), ms(nt.max))
	fmt.Printf("%-34s %10s %10s %10s %10s\n", "  minus the window", "", ms(nt.p50-cfg.window), ms(nt.p99-cfg.window), ms(nt.max-cfg.window))
	fmt.Printf("\ntriggers %d, notifications %d (%.2f triggers per notification) in %v\n", nTrig, nFires, float64(nTrig)/math.Max(float64(nFires), 1), cfg.duration)
	fmt.Printf("index memory: %.0f B per subscription at %d sessions × 1 URI (target ≤ 2048)\n", perSub, cfg.sessions)
	target := cfg.window + cfg.slack
	verdict := "PASS"
	if nt.p99 > target {
		verdict = "WARN"
	}
	fmt.Printf("target p99 event → notification ≤ window + %v = %v: p99 %s  %s\n", cfg.slack, target, ms(nt.p99), verdict)
	return nil
}

type summary struct {
	n             int
	p50, p99, max time.Duration
}

func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(math.Ceil(p*float64(len(d))))-1)] }
	return summary{n: len(d), p50: q(0.50), p99: q(0.99), max: d[len(d)-1]}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

package main

// Fault tests of live subscriptions in which PostgreSQL and Redis are
// really stopped and started again while clients are subscribed. Each test
// runs its own PostgreSQL cluster and redis-server (pgtest.Private,
// redistest.Private), so restarting them disturbs no other test.
//
// Every watcher subscribes to two URIs: parse://Ticket/count, which the
// tests write to, and parse://Project/count, which nothing writes to. A
// change of a Ticket row notifies only the first; a resync ("changes may
// have been missed") notifies both. So a Project notification tells a
// resync apart from a delivered change.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/internal/testing/redistest"
	"github.com/parsemcp/parsemcp/store/postgres"
)

const (
	ticketURI  = "parse://Ticket/count"
	projectURI = "parse://Project/count" // never written: notified only by a resync
	// restartTimeout bounds every wait of these tests.
	restartTimeout = 30 * time.Second
	// quietFor is how long no notification must come before a step
	// starts, so that a late one of the step before is not taken for its.
	quietFor = time.Second
)

// restartRig is a private PostgreSQL and Redis, the serve processes using
// them, a writer client on A and subscribed watchers.
type restartRig struct {
	pg       *pgtest.PrivateServer
	rd       *redistest.PrivateServer
	url      string
	a        *server
	procs    []namedServer
	writer   *mcp.ClientSession
	watchers []*liveWatcher
	written  int // Ticket rows created since the rig was ready
}

type namedServer struct {
	name string
	s    *server
}

// liveWatcher is a client subscribed to ticketURI and projectURI on one
// serve process.
type liveWatcher struct {
	name    string
	cs      *mcp.ClientSession
	updates chan string
}

// newRestartRig starts the private services, writes the demo into
// PostgreSQL, installs the change feed, and starts A (write tools) and B
// (watcher), both on PostgreSQL and Redis. With pgOnly, a third process C
// uses PostgreSQL alone (no Redis): what reaches it came through its own
// change feed.
func newRestartRig(t *testing.T, pgOnly bool) *restartRig {
	r := &restartRig{pg: pgtest.Private(t), rd: redistest.Private(t)}
	r.url = r.pg.URL()
	if _, stderr, code := run(t, nil, "demo", "--rows", "300", "--out", r.url, "-q"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	if _, stderr, code := run(t, nil, "migrate", "--store", r.url); code != 0 {
		t.Fatalf("migrate: %s", stderr)
	}
	writeEnv := []string{"PARSEMCP_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_RAW_CRUD=true"}
	r.a = startServe(t, writeEnv, "--store", r.url, "--redis", r.rd.URL(), "--permission", "write", "--rate-limit", "0", "--live-debounce", "100ms")
	b := startServe(t, nil, "--store", r.url, "--redis", r.rd.URL(), "--rate-limit", "0", "--live-debounce", "100ms")
	r.procs = []namedServer{{"A", r.a}, {"B", b}}
	r.watchers = []*liveWatcher{r.watch(t, "B", b)}
	if pgOnly {
		c := startServe(t, nil, "--store", r.url, "--rate-limit", "0", "--live-debounce", "100ms")
		r.procs = append(r.procs, namedServer{"C", c})
		r.watchers = append(r.watchers, r.watch(t, "C", c))
	}
	ctx := context.Background()
	writer, err := mcp.NewClient(&mcp.Implementation{Name: "writer", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.a.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { writer.Close() })
	r.writer = writer
	r.prime(t)
	r.written = 0 // counted from here: the tests read the count now
	return r
}

func (r *restartRig) watch(t *testing.T, name string, s *server) *liveWatcher {
	t.Helper()
	w := &liveWatcher{name: name, updates: make(chan string, 64)}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "watcher-" + name, Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case w.updates <- req.Params.URI:
			default: // 64 unread: the test is failing anyway
			}
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, uri := range []string{ticketURI, projectURI} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	w.cs = cs
	return w
}

// prime writes through A until every watcher has had a notification: a
// client's listening stream opens asynchronously after initialize. Then
// it waits for quiet, so later steps start with nothing pending.
func (r *restartRig) prime(t *testing.T) {
	t.Helper()
	pending := map[*liveWatcher]bool{}
	for _, w := range r.watchers {
		pending[w] = true
	}
	deadline := time.Now().Add(restartTimeout)
	for len(pending) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no first notification on %d watcher(s)\n%s", len(pending), r.dump())
		}
		r.createViaA(t, "prime")
		wait := time.Now().Add(time.Second)
		for len(pending) > 0 && time.Now().Before(wait) {
			for w := range pending {
				select {
				case <-w.updates:
					delete(pending, w)
				default:
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	r.settle(t)
}

// createViaA creates a Ticket through A's create_object tool, retrying
// while A cannot reach the database (its pool reconnects after a restart).
// It returns how many attempts failed.
func (r *restartRig) createViaA(t *testing.T, title string) int {
	t.Helper()
	failed := 0
	deadline := time.Now().Add(restartTimeout)
	for {
		out, isErr := callTool(t, r.writer, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": title}})
		if !isErr {
			r.written++
			return failed
		}
		failed++
		if time.Now().After(deadline) {
			t.Fatalf("create_object on A keeps failing: %v\n%s", out, r.dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// insertBySQL inserts a Ticket with plain SQL at url (no parsemcp
// involved: only the change log's trigger sees it).
func (r *restartRig) insertBySQL(t *testing.T, url, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect for the SQL write: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `INSERT INTO "Ticket" ("objectId", "createdAt", "updatedAt", "title") VALUES ($1, now(), now(), 'by SQL')`, id); err != nil {
		t.Fatalf("SQL write: %v", err)
	}
	r.written++
}

// expect waits until every watcher has had a notification of each of
// uris, and returns the notifications of other URIs that came meanwhile
// (watcher name → URIs).
func (r *restartRig) expect(t *testing.T, what string, uris ...string) map[string][]string {
	t.Helper()
	start := time.Now()
	deadline := time.After(restartTimeout)
	extra := map[string][]string{}
	for _, w := range r.watchers {
		missing := map[string]bool{}
		for _, u := range uris {
			missing[u] = true
		}
		for len(missing) > 0 {
			select {
			case uri := <-w.updates:
				if missing[uri] {
					delete(missing, uri)
				} else {
					extra[w.name] = append(extra[w.name], uri)
				}
			case <-deadline:
				t.Fatalf("%s: no notification of %v on %s within %v\n%s", what, slices.Sorted(maps.Keys(missing)), w.name, restartTimeout, r.dump())
			}
		}
		t.Logf("%s: %s notified of %v within %v", what, w.name, uris, time.Since(start).Round(time.Millisecond))
	}
	return extra
}

// settle waits until no watcher has had a notification for quietFor, and
// returns those that came meanwhile (watcher name → URIs).
func (r *restartRig) settle(t *testing.T) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	deadline := time.Now().Add(restartTimeout)
	quietSince := time.Now()
	for time.Since(quietSince) < quietFor {
		if time.Now().After(deadline) {
			t.Fatalf("notifications do not stop: %v\n%s", got, r.dump())
		}
		for _, w := range r.watchers {
			select {
			case uri := <-w.updates:
				got[w.name] = append(got[w.name], uri)
				quietSince = time.Now()
			default:
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return got
}

// noResync fails the test when a step that delivered a Ticket change also
// notified projectURI: that would be a resync, where the change should
// have been delivered as itself (read from the change log).
func noResync(t *testing.T, what string, seen ...map[string][]string) {
	t.Helper()
	for _, m := range seen {
		for name, uris := range m {
			if slices.Contains(uris, projectURI) {
				t.Fatalf("%s: %s was notified of %s too (a resync), where the change log had the row: %v", what, name, projectURI, uris)
			}
		}
	}
}

// count reads ticketURI on watcher w (retrying while its process's pool
// reconnects after a restart) and returns the count and the failed reads.
func (r *restartRig) count(t *testing.T, w *liveWatcher) (int64, int) {
	t.Helper()
	failed := 0
	deadline := time.Now().Add(restartTimeout)
	for {
		res, err := w.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: ticketURI})
		if err == nil {
			var v struct{ Count int64 }
			if err := json.Unmarshal([]byte(res.Contents[0].Text), &v); err != nil {
				t.Fatalf("%s: %s: %v", w.name, res.Contents[0].Text, err)
			}
			return v.Count, failed
		}
		failed++
		if time.Now().After(deadline) {
			t.Fatalf("%s: resources/read keeps failing: %v\n%s", w.name, err, r.dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkCounts asserts every watcher reads want Tickets.
func (r *restartRig) checkCounts(t *testing.T, what string, want int64) {
	t.Helper()
	for _, w := range r.watchers {
		got, failed := r.count(t, w)
		if got != want {
			t.Fatalf("%s: %s reads %d tickets, want %d", what, w.name, got, want)
		}
		if failed > 0 {
			t.Logf("%s: %s: %d resources/read failed before one succeeded", what, w.name, failed)
		}
	}
}

// feedConns returns how many change-feed connections (LISTEN) the private
// cluster has, asking through url.
func (r *restartRig) feedConns(t *testing.T, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, postgres.FeedApplicationName).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFeeds waits until every serve process's change feed is connected.
func (r *restartRig) waitFeeds(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(restartTimeout)
	for r.feedConns(t, r.url) < len(r.procs) {
		if time.Now().After(deadline) {
			t.Fatalf("the change feeds did not reconnect (%d of %d)\n%s", r.feedConns(t, r.url), len(r.procs), r.dump())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// whileCutOff runs fn with the cluster up on its Unix socket only, so that
// no serve process (they connect over TCP) can be connected: fn's writes
// notify no listener. fn gets the socket URL. The cluster is then started
// as usual.
func (r *restartRig) whileCutOff(t *testing.T, fn func(url string)) {
	t.Helper()
	r.pg.Stop()
	r.pg.StartSocketOnly()
	if n := r.feedConns(t, r.pg.SocketURL()); n != 0 {
		t.Fatalf("%d change-feed connections on a socket-only cluster", n)
	}
	fn(r.pg.SocketURL())
	r.pg.Stop()
	r.pg.Start()
}

func (r *restartRig) dump() string {
	var b strings.Builder
	for _, p := range r.procs {
		fmt.Fprintf(&b, "%s:\n%s\n", p.name, p.s.stderr)
	}
	fmt.Fprintf(&b, "PostgreSQL log (tail):\n%s\nRedis log (tail):\n%s", tail(r.pg.Log(), 4000), tail(r.rd.Log(), 2000))
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// PostgreSQL is stopped and started again under subscribed clients: on B
// (PostgreSQL + Redis) and on C (PostgreSQL only, so what it hears came
// through its own change feed).
//
//  1. A restart with nothing written meanwhile: the feeds reconnect. The
//     notifications that come are logged, not asserted: none is expected,
//     because a feed reads on from its last sequence number, finds
//     nothing, and sends a resync only when the log was pruned past that
//     point. A row inserted by plain SQL afterwards is notified, and the
//     count reads right.
//  2. A row written while no change-feed connection can exist (the
//     cluster is up on its Unix socket only): its NOTIFY reaches nobody.
//     Once the cluster listens on TCP again, the row is notified as itself
//     (read back from the log: Ticket only, no resync).
//  3. A row written through A's tools right after a restart, while the
//     feeds are still reconnecting (A's own pool may fail first: retried).
//  4. A row written while cut off, and the log pruned past it before any
//     feed could read it: the feeds cannot know what they missed and send
//     a resync, which notifies every subscribed URI (Project too).
func TestLiveRestartPostgres(t *testing.T) {
	r := newRestartRig(t, true)
	base, _ := r.count(t, r.watchers[0])

	// 1. Restart, nothing missed; then a plain SQL write.
	start := time.Now()
	r.pg.Restart()
	t.Logf("restart 1: PostgreSQL down and up again in %v", time.Since(start).Round(time.Millisecond))
	r.waitFeeds(t)
	t.Logf("restart 1: every change feed reconnected %v after the stop began", time.Since(start).Round(time.Millisecond))
	t.Logf("restart 1: notifications for the restart itself (none expected): %v", r.settle(t))
	r.insertBySQL(t, r.url, "rsqlafter1")
	extra := r.expect(t, "restart 1: SQL write afterwards", ticketURI)
	r.checkCounts(t, "restart 1", base+int64(r.written))
	noResync(t, "restart 1", extra, r.settle(t))

	// 2. A write no change-feed connection could hear: caught up.
	r.whileCutOff(t, func(url string) { r.insertBySQL(t, url, "rsqlmissed2") })
	extra = r.expect(t, "restart 2: SQL write while every feed was cut off", ticketURI)
	r.checkCounts(t, "restart 2", base+int64(r.written))
	noResync(t, "restart 2", extra, r.settle(t))

	// 3. A write through A's tools while the feeds reconnect.
	r.pg.Restart()
	feeds := r.feedConns(t, r.url)
	failed := r.createViaA(t, "right after restart 3")
	t.Logf("restart 3: %d of %d change feeds connected just before the write; %d create_object attempt(s) failed first", feeds, len(r.procs), failed)
	extra = r.expect(t, "restart 3: write through A right after the restart", ticketURI)
	r.checkCounts(t, "restart 3", base+int64(r.written))
	noResync(t, "restart 3", extra, r.settle(t))

	// 4. Missed and pruned: a resync.
	r.whileCutOff(t, func(url string) {
		r.insertBySQL(t, url, "rsqlpruned4")
		ctx := context.Background()
		st, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if n, err := st.PruneChanges(ctx, 0); err != nil || n == 0 {
			t.Fatalf("pruned %d log rows: %v", n, err)
		}
	})
	r.expect(t, "restart 4: SQL write pruned from the log while every feed was cut off", ticketURI, projectURI)
	r.checkCounts(t, "restart 4", base+int64(r.written))
}

// Redis is stopped and started again under a client subscribed on B:
//
//  1. While Redis is down, a write through A still reaches B (through B's
//     own PostgreSQL change feed; A fails to share it over Redis).
//  2. When Redis is back, B's Redis subscriber subscribes again and sends
//     a resync, which covers whatever other instances published while B
//     was cut off: with nothing written, B is notified of both URIs.
//  3. After the restart, a write through A is delivered to B as itself,
//     and the instances publish their changes on the restarted Redis
//     again.
func TestLiveRestartRedis(t *testing.T) {
	r := newRestartRig(t, false)
	base, _ := r.count(t, r.watchers[0])

	r.rd.Stop()
	r.createViaA(t, "while Redis is down")
	extra := r.expect(t, "write through A while Redis is down", ticketURI)
	r.checkCounts(t, "while Redis is down", base+int64(r.written))
	noResync(t, "while Redis is down", extra, r.settle(t))

	start := time.Now()
	r.rd.Start()
	r.expect(t, "Redis back, nothing written", ticketURI, projectURI)
	t.Logf("Redis: resync %v after it came back", time.Since(start).Round(time.Millisecond))
	r.settle(t)

	// The instances' change frames travel over the restarted Redis again.
	ctx := context.Background()
	sub := r.rd.Client()
	ps := sub.Subscribe(ctx, "parsemcp:live") // the channel `serve --redis` uses
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, restartTimeout); err != nil { // the confirmation
		t.Fatal(err)
	}
	r.createViaA(t, "after the Redis restart")
	extra = r.expect(t, "write through A after the Redis restart", ticketURI)
	if _, err := ps.ReceiveMessage(ctxTimeout(t)); err != nil {
		t.Fatalf("no change published on the restarted Redis: %v\n%s", err, r.dump())
	}
	r.checkCounts(t, "after the Redis restart", base+int64(r.written))
	noResync(t, "after the Redis restart", extra, r.settle(t))
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	t.Cleanup(cancel)
	return ctx
}

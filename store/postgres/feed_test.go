package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/storetest"
)

// feedStore opens a store in a fresh schema with a Note class; install
// installs the change log first. It returns the store and its URL.
func feedStore(t *testing.T, install bool, opts ...postgres.Option) (*postgres.Store, string) {
	t.Helper()
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	url := pgtest.Schema(t, "feed_"+hex.EncodeToString(b[:]))
	st, err := postgres.Create(ctx, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sch := parse.NewSchema("Note")
	for name, f := range map[string]parse.Field{
		"text": {Type: parse.TypeString}, "n": {Type: parse.TypeNumber}, "when": {Type: parse.TypeDate},
		"owner": {Type: parse.TypePointer, TargetClass: parse.ClassUser}, "where": {Type: parse.TypeGeoPoint},
		"meta": {Type: parse.TypeObject}, "tags": {Type: parse.TypeArray}, "fans": {Type: parse.TypeRelation, TargetClass: parse.ClassUser},
	} {
		sch.Fields[name] = f
	}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if install {
		if _, err := st.InstallChangeFeed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return st, url
}

// sqlClient is another client of the database: plain SQL, not a Store.
func sqlClient(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func exec(t *testing.T, c *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func findNote(t *testing.T, st *postgres.Store, id string) parse.Object {
	t.Helper()
	sch, err := st.Schema(context.Background(), "Note")
	if err != nil {
		t.Fatal(err)
	}
	w, err := query.ParseWhere(sch, map[string]any{"objectId": id})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := st.Find(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: "Note", Where: w, Limit: -1})
	if err != nil || len(rows) != 1 {
		t.Fatalf("find %s: %v %v", id, rows, err)
	}
	return rows[0]
}

func seqOf(t *testing.T, c store.Change) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscanf(c.ID, "pg:%d", &n); err != nil {
		t.Fatalf("change ID %q: %v", c.ID, err)
	}
	return n
}

// InstallChangeFeed (and so `parsemcp migrate`) is idempotent; classes
// created afterwards get their triggers.
func TestInstallChangeFeedIdempotent(t *testing.T) {
	ctx := context.Background()
	st, _ := feedStore(t, false)
	if ok, err := st.ChangeFeedInstalled(ctx); err != nil || ok {
		t.Fatalf("installed before install: %v %v", ok, err)
	}
	first, err := st.InstallChangeFeed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Note", "_Role", "_Session", "_User"}
	if !first.CreatedTable || first.Function != "created" || !slices.Equal(first.Attached, want) || len(first.Present) != 0 {
		t.Fatalf("first install: %+v", first)
	}
	second, err := st.InstallChangeFeed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second.CreatedTable || second.Function != "replaced" || len(second.Attached) != 0 || !slices.Equal(second.Present, want) {
		t.Fatalf("second install: %+v", second)
	}
	if ok, err := st.ChangeFeedInstalled(ctx); err != nil || !ok {
		t.Fatalf("installed after install: %v %v", ok, err)
	}
	if err := st.CreateClass(ctx, parse.NewSchema("Later")); err != nil {
		t.Fatal(err)
	}
	third, err := st.InstallChangeFeed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Attached) != 0 || !slices.Contains(third.Present, "Later") {
		t.Fatalf("a class created after install has no trigger: %+v", third)
	}
	var triggers int
	if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = '"Note"'::regclass AND NOT tgisinternal`).Scan(&triggers); err != nil || triggers != 2 {
		t.Fatalf("triggers on Note: %d %v", triggers, err)
	}
}

// Rows written by plain SQL (another client) arrive with the rows before
// and after, decoded as Find returns them; a row larger than NOTIFY's
// payload limit arrives whole.
func TestFeedForeignWriter(t *testing.T) {
	st, url := feedStore(t, true)
	r := &storetest.Recorder{}
	defer st.Watch(r.Add)()
	c := sqlClient(t, url)

	exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt", "_rperm", "_wperm", "text", "n", "when", "owner", "where", "meta", "tags")
		VALUES ('s1', now(), now(), '{*,u1}', '{u1}', 'hello', 4.5, '2024-05-06T07:08:09.123Z', 'u1', point(-74.006, 40.7128), '{"a": {"b": [1, 2]}}', '["x", 3]')`)
	created := findNote(t, st, "s1")
	exec(t, c, `UPDATE "Note" SET "text" = 'bye', "_rperm" = NULL, "_wperm" = NULL, "updatedAt" = now() WHERE "objectId" = 's1'`)
	updated := findNote(t, st, "s1")
	big := strings.Repeat("0123456789abcdef", 1024) // 16 KiB
	exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt", "text", "meta") VALUES ('big', now(), now(), $1, jsonb_build_object('blob', $1::text, 'n', 1))`, big)
	bigRow := findNote(t, st, "big")
	exec(t, c, `DELETE FROM "Note" WHERE "objectId" = 's1'`)

	got := r.WaitFor(t, 4)
	check := func(i int, op store.ChangeOp, id string, before, after parse.Object) {
		t.Helper()
		ch := got[i]
		if ch.Op != op || ch.Class != "Note" || ch.ObjectID != id || !strings.HasPrefix(ch.ID, "pg:") || ch.Time.IsZero() {
			t.Fatalf("change %d:\n%s", i, storetest.DescribeChanges(got))
		}
		if !storetest.CanonEqual(ch.Before, before) || !storetest.CanonEqual(ch.After, after) {
			t.Fatalf("change %d rows:\n got before %v\nwant before %v\n got after %v\nwant after %v", i, ch.Before, before, ch.After, after)
		}
	}
	check(0, store.ChangeCreate, "s1", nil, created)
	check(1, store.ChangeUpdate, "s1", created, updated)
	check(2, store.ChangeCreate, "big", nil, bigRow)
	check(3, store.ChangeDelete, "s1", updated, nil)
	if created["ACL"] == nil || created["owner"] == nil || created["where"] == nil || created["fans"] == nil {
		t.Fatalf("the fixture row lacks fields: %v", created)
	}
	if got[2].After["text"] != big || len(got[2].After["meta"].(map[string]any)["blob"].(string)) != len(big) {
		t.Fatal("the large row was cut")
	}
	for i := 1; i < len(got); i++ {
		if seqOf(t, got[i]) <= seqOf(t, got[i-1]) {
			t.Fatalf("IDs out of order:\n%s", storetest.DescribeChanges(got))
		}
	}
	// Parse Server's internal columns are not copied into the log.
	exec(t, c, `ALTER TABLE "_User" ADD COLUMN IF NOT EXISTS "_hashed_password" text`)
	exec(t, c, `INSERT INTO "_User" ("objectId", "createdAt", "updatedAt", "username", "_hashed_password", "_rperm") VALUES ('u9', now(), now(), 'ann', 'secret-hash', '{u9}')`)
	got = r.WaitFor(t, 5)
	if ch := got[4]; ch.Class != "_User" || ch.After["username"] != "ann" || ch.After["ACL"] == nil {
		t.Fatalf("user row:\n%s", storetest.DescribeChanges(got))
	}
	var leaked bool
	if err := c.QueryRow(context.Background(), `SELECT bool_or(after::text LIKE '%secret-hash%') FROM _parsemcp_changes`).Scan(&leaked); err != nil || leaked {
		t.Fatalf("the password hash is in the change log: %v %v", leaked, err)
	}
	// TRUNCATE cannot list its rows: a resync of the class.
	exec(t, c, `TRUNCATE "Note"`)
	got = r.WaitFor(t, 6)
	if ch := got[5]; ch.Op != store.ChangeResync || ch.Class != "Note" {
		t.Fatalf("truncate:\n%s", storetest.DescribeChanges(got))
	}
}

// Changes arrive in commit order, also when transactions commit in another
// order than they wrote: the later-allocated change that commits first
// comes first, and the earlier one when its transaction commits.
func TestFeedCommitOrderAcrossTransactions(t *testing.T) {
	ctx := context.Background()
	st, url := feedStore(t, true)
	r := &storetest.Recorder{}
	defer st.Watch(r.Add)()
	c1, c2 := sqlClient(t, url), sqlClient(t, url)
	tx1, err := c1.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx1.Exec(ctx, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('t1', now(), now())`); err != nil {
		t.Fatal(err)
	}
	exec(t, c2, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('t2', now(), now())`)
	got := r.WaitFor(t, 1)
	if got[0].ObjectID != "t2" {
		t.Fatalf("first change:\n%s", storetest.DescribeChanges(got))
	}
	// A rolled-back write leaves a gap in the log; nothing waits on it.
	tx3, err := c2.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx3.Exec(ctx, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('gone', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if err := tx3.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "Note", []parse.Object{{"objectId": "t3"}}); err != nil {
		t.Fatal(err)
	}
	got = r.WaitFor(t, 3)
	if len(got) != 3 || got[1].ObjectID != "t1" || got[2].ObjectID != "t3" {
		t.Fatalf("want t2, t1, t3:\n%s", storetest.DescribeChanges(got))
	}
	if seqOf(t, got[1]) >= seqOf(t, got[0]) {
		t.Fatalf("t1's log row should be older than t2's:\n%s", storetest.DescribeChanges(got))
	}
}

// gate holds the listener's reconnections while closed.
type gate struct {
	mu      sync.Mutex
	closed  chan struct{}
	waiting chan struct{} // a reconnection waits
}

func (g *gate) hook() {
	g.mu.Lock()
	c, w := g.closed, g.waiting
	g.mu.Unlock()
	if c != nil {
		select {
		case w <- struct{}{}:
		default:
		}
		<-c
	}
}

func (g *gate) close() {
	g.mu.Lock()
	g.closed, g.waiting = make(chan struct{}), make(chan struct{}, 1)
	g.mu.Unlock()
}

func (g *gate) open() {
	g.mu.Lock()
	close(g.closed)
	g.closed = nil
	g.mu.Unlock()
}

// killListener terminates the feed's LISTEN connection and waits until
// the listener tries to reconnect (held by g).
func killListener(t *testing.T, c *pgx.Conn, g *gate) {
	t.Helper()
	g.close()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, postgres.FeedApplicationName).Scan(&n); err != nil || n == 0 {
		t.Fatalf("terminated %d listeners: %v", n, err)
	}
	select {
	case <-g.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not notice its connection was gone")
	}
}

// The LISTEN connection is killed; what is committed while it is down
// arrives, in order, once it is back.
func TestFeedReconnect(t *testing.T) {
	ctx := context.Background()
	st, url := feedStore(t, true)
	g := &gate{}
	postgres.SetBeforeConnect(st, g.hook)
	r := &storetest.Recorder{}
	defer st.Watch(r.Add)()
	c := sqlClient(t, url)
	if err := st.Create(ctx, "Note", []parse.Object{{"objectId": "before"}}); err != nil {
		t.Fatal(err)
	}
	r.WaitFor(t, 1)

	killListener(t, c, g)
	var want []string
	for i := range 20 {
		id := fmt.Sprintf("down%02d", i)
		if i%2 == 0 {
			exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt", "n") VALUES ($1, now(), now(), $2)`, id, i)
		} else if err := st.Create(ctx, "Note", []parse.Object{{"objectId": id, "n": float64(i)}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, id)
	}
	if _, _, err := st.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Note", ID: "down00"}, parse.Object{"n": 100.0}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "down00")
	if got := r.Changes(); len(got) != 1 {
		t.Fatalf("changes while the listener was down:\n%s", storetest.DescribeChanges(got))
	}
	g.open()
	got := r.WaitFor(t, 1+len(want))
	if len(got) != 1+len(want) {
		t.Fatalf("after reconnect:\n%s", storetest.DescribeChanges(got))
	}
	for i, id := range want {
		ch := got[1+i]
		if ch.ObjectID != id || seqOf(t, ch) <= seqOf(t, got[i]) {
			t.Fatalf("change %d: want %s, in log order:\n%s", 1+i, id, storetest.DescribeChanges(got))
		}
	}
	if last := got[len(got)-1]; last.Op != store.ChangeUpdate || last.Before["n"] != 0.0 || last.After["n"] != 100.0 {
		t.Fatalf("the update: %+v", last)
	}
	// And it listens again.
	exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('after', now(), now())`)
	if got := r.WaitFor(t, len(want)+2); got[len(got)-1].ObjectID != "after" {
		t.Fatalf("after the reconnect:\n%s", storetest.DescribeChanges(got))
	}
}

// Rows pruned before a disconnected listener could read them: a resync of
// every class, then the feed goes on.
func TestFeedPrunedGap(t *testing.T) {
	ctx := context.Background()
	st, url := feedStore(t, true)
	g := &gate{}
	postgres.SetBeforeConnect(st, g.hook)
	r := &storetest.Recorder{}
	defer st.Watch(r.Add)()
	c := sqlClient(t, url)
	killListener(t, c, g)
	for i := range 3 {
		exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ($1, now(), now())`, fmt.Sprintf("p%d", i))
	}
	n, err := st.PruneChanges(ctx, 0)
	if err != nil || n != 3 {
		t.Fatalf("pruned %d: %v", n, err)
	}
	exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('kept', now(), now())`)
	g.open()
	got := r.WaitFor(t, 2)
	if len(got) != 2 || got[0].Op != store.ChangeResync || got[0].Class != "" || got[1].ObjectID != "kept" {
		t.Fatalf("want a resync then kept:\n%s", storetest.DescribeChanges(got))
	}
	exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('next', now(), now())`)
	if got := r.WaitFor(t, 3); len(got) != 3 || got[2].ObjectID != "next" {
		t.Fatalf("after the resync:\n%s", storetest.DescribeChanges(got))
	}
}

// Without the change log, the feed reports this Store's writes (and not
// another client's); once the log is installed it switches to it, without
// reporting a write twice.
func TestFeedNotInstalledThenInstalled(t *testing.T) {
	ctx := context.Background()
	st, url := feedStore(t, false, postgres.WithInstallCheck(20*time.Millisecond))
	r := &storetest.Recorder{}
	defer st.Watch(r.Add)()
	if st.FeedUsesLog() {
		t.Fatal("the feed claims the log before it is installed")
	}
	c := sqlClient(t, url)
	exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('unseen', now(), now())`)
	if err := st.Create(ctx, "Note", []parse.Object{{"objectId": "own1"}}); err != nil {
		t.Fatal(err)
	}
	got := r.WaitFor(t, 1)
	if got[0].ObjectID != "own1" || got[0].ID != "" || got[0].After == nil {
		t.Fatalf("in-process change:\n%s", storetest.DescribeChanges(got))
	}
	// Writes go on during the install and the switch: each once.
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		i := 0
		for {
			select {
			case <-stop:
				done <- i
				return
			default:
			}
			if err := st.Create(ctx, "Note", []parse.Object{{"objectId": fmt.Sprintf("w%d", i)}}); err != nil {
				t.Error(err)
			}
			i++
		}
	}()
	if _, err := st.InstallChangeFeed(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !st.FeedUsesLog() {
		if time.Now().After(deadline) {
			t.Fatal("the feed did not switch to the installed log")
		}
		time.Sleep(5 * time.Millisecond)
	}
	exec(t, c, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('seen', now(), now())`)
	close(stop)
	n := <-done
	got = r.WaitFor(t, 1+n+1)
	ids := map[string]int{}
	for _, ch := range got {
		ids[ch.ObjectID]++
	}
	for id, k := range ids {
		if k != 1 {
			t.Errorf("%s reported %d times", id, k)
		}
	}
	if ids["unseen"] != 0 || ids["seen"] != 1 || len(ids) != n+2 {
		t.Fatalf("%d writes; got:\n%s", n, storetest.DescribeChanges(got))
	}
}

// A class created by another server after Watch began gets its triggers
// (CreateClass attaches them when the log is installed), and its rows are
// decoded with its fields at once (the schema cache is reloaded).
func TestFeedClassCreatedElsewhere(t *testing.T) {
	ctx := context.Background()
	st, url := feedStore(t, true)
	r := &storetest.Recorder{}
	defer st.Watch(r.Add)()
	if _, err := st.Schemas(ctx); err != nil { // warm the schema cache
		t.Fatal(err)
	}
	other, err := postgres.Create(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sch := parse.NewSchema("Fresh")
	sch.Fields["title"] = parse.Field{Type: parse.TypeString}
	if err := other.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if err := other.Create(ctx, "Fresh", []parse.Object{{"objectId": "f1", "title": "new"}}); err != nil {
		t.Fatal(err)
	}
	got := r.WaitFor(t, 1)
	if c := got[0]; c.Class != "Fresh" || c.Op != store.ChangeCreate || c.After["title"] != "new" {
		t.Fatalf("row of a class created elsewhere:\n%s", storetest.DescribeChanges(got))
	}
}

// A hole left by a writer whose xid is younger than the transaction that
// committed after it (so above that snapshot's xmax) is not given up while
// the writer runs: its row arrives when it commits.
func TestFeedHoleOfYoungerWriter(t *testing.T) {
	ctx := context.Background()
	st, url := feedStore(t, true)
	r := &storetest.Recorder{}
	defer st.Watch(r.Add)()
	cOld, cYoung := sqlClient(t, url), sqlClient(t, url)
	older, err := cOld.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := older.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil { // the older xid
		t.Fatal(err)
	}
	younger, err := cYoung.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The younger transaction takes the lower log number...
	if _, err := younger.Exec(ctx, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('young', now(), now())`); err != nil {
		t.Fatal(err)
	}
	// ...the older one the next, and commits first.
	if _, err := older.Exec(ctx, `INSERT INTO "Note" ("objectId", "createdAt", "updatedAt") VALUES ('old', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if err := older.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.WaitFor(t, 1); got[0].ObjectID != "old" {
		t.Fatalf("first:\n%s", storetest.DescribeChanges(got))
	}
	time.Sleep(300 * time.Millisecond) // several hole checks of the listener, while young runs
	if err := younger.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.WaitFor(t, 2); got[1].ObjectID != "young" {
		t.Fatalf("second:\n%s", storetest.DescribeChanges(got))
	}
}

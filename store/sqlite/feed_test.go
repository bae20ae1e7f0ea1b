package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/store/storetest"
)

// twoStores opens two Stores on one file, as two processes would; a
// watches with a short poll interval.
func twoStores(t *testing.T) (a, b *sqlite.Store, path string) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "shared.db")
	a, err := sqlite.Open(ctx, path, sqlite.WithPollInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	sch := parse.NewSchema("Note")
	sch.Fields["text"] = parse.Field{Type: parse.TypeString}
	sch.Fields["n"] = parse.Field{Type: parse.TypeNumber}
	if err := a.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	return a, b, path
}

func findID(t *testing.T, s store.Store, class, id string) parse.Object {
	t.Helper()
	w, err := query.ParseWhere(mustSchema(t, s, class), map[string]any{"objectId": id})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Find(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: class, Where: w, Limit: -1})
	if err != nil || len(rows) != 1 {
		t.Fatalf("find %s %s: %v %v", class, id, rows, err)
	}
	return rows[0]
}

func mustSchema(t *testing.T, s store.Store, class string) parse.Schema {
	t.Helper()
	sch, err := s.Schema(context.Background(), class)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// Another Store on the same file: its create and update arrive with the
// row after; its delete as a resync of the class; a's own writes once.
func TestFeedOtherProcess(t *testing.T) {
	ctx := context.Background()
	a, b, _ := twoStores(t)
	r := &storetest.Recorder{}
	defer a.Watch(r.Add)()

	if err := b.Create(ctx, "Note", []parse.Object{{"objectId": "b1", "text": "from b", "ACL": map[string]any{"*": map[string]any{"read": true}}}}); err != nil {
		t.Fatal(err)
	}
	got := r.WaitFor(t, 1)
	want := findID(t, b, "Note", "b1")
	if c := got[0]; c.Op != store.ChangeCreate || c.Class != "Note" || c.ObjectID != "b1" || c.Before != nil || !same(c.After, want) {
		t.Fatalf("foreign create:\n%s\nwant After %v", storetest.DescribeChanges(got), want)
	}
	if _, _, err := b.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Note", ID: "b1"}, parse.Object{"text": "edited"}); err != nil {
		t.Fatal(err)
	}
	got = r.WaitFor(t, 2)
	if c := got[1]; c.Op != store.ChangeUpdate || c.ObjectID != "b1" || c.Before != nil || c.After["text"] != "edited" || !same(c.After, findID(t, b, "Note", "b1")) {
		t.Fatalf("foreign update:\n%s", storetest.DescribeChanges(got))
	}

	// Own writes, interleaved with the poller's scans: each reported once.
	for i := range 5 {
		id := "a" + string(rune('0'+i))
		if err := a.Create(ctx, "Note", []parse.Object{{"objectId": id, "n": float64(i)}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(25 * time.Millisecond) // let a poll run between them
		if _, _, err := a.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Note", ID: id}, parse.Object{"n": float64(i + 10)}); err != nil {
			t.Fatal(err)
		}
	}
	got = r.WaitFor(t, 12)
	for _, c := range got[2:12] {
		if c.Before == nil && c.Op == store.ChangeUpdate {
			t.Fatalf("an own update reported without Before (seen as foreign):\n%s", storetest.DescribeChanges(got))
		}
	}

	if _, err := b.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Note", ID: "b1"}); err != nil {
		t.Fatal(err)
	}
	got = r.WaitFor(t, 13)
	if c := got[12]; c.Op != store.ChangeResync || c.Class != "Note" {
		t.Fatalf("foreign delete:\n%s", storetest.DescribeChanges(got))
	}
	// A sentinel from b: nothing else came in between (no duplicates).
	if err := b.Create(ctx, "Note", []parse.Object{{"objectId": "b2"}}); err != nil {
		t.Fatal(err)
	}
	got = r.WaitFor(t, 14)
	if len(got) != 14 || got[13].ObjectID != "b2" {
		t.Fatalf("want the sentinel last, got:\n%s", storetest.DescribeChanges(got))
	}
}

// A plain *sql.DB writing the file (not a Store at all), in a class
// created after Watch began, and a row backdated below the high-water mark
// (found by the row count: a resync).
func TestFeedRawSQLWriter(t *testing.T) {
	ctx := context.Background()
	a, b, path := twoStores(t)
	r := &storetest.Recorder{}
	defer a.Watch(r.Add)()

	sch := parse.NewSchema("Later")
	sch.Fields["v"] = parse.Field{Type: parse.TypeNumber}
	if err := b.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	now := parse.FormatDate(time.Now())
	if _, err := raw.ExecContext(ctx, `INSERT INTO "Later" ("objectId", "createdAt", "updatedAt", "_rperm", "_wperm", "v") VALUES ('r1', ?, ?, '["*"]', '["u1"]', 7)`, now, now); err != nil {
		t.Fatal(err)
	}
	got := r.WaitFor(t, 1)
	c := got[0]
	wantACL := map[string]any{"*": map[string]any{"read": true}, "u1": map[string]any{"write": true}}
	if c.Op != store.ChangeCreate || c.Class != "Later" || c.After["v"] != 7.0 || !same(c.After["ACL"], wantACL) {
		t.Fatalf("raw insert:\n%s", storetest.DescribeChanges(got))
	}
	// Backdated: below the mark, invisible to the scan; the count tells.
	if _, err := raw.ExecContext(ctx, `INSERT INTO "Later" ("objectId", "createdAt", "updatedAt", "v") VALUES ('old', '2001-01-01T00:00:00.000Z', '2001-01-01T00:00:00.000Z', 1)`); err != nil {
		t.Fatal(err)
	}
	got = r.WaitFor(t, 2)
	if c := got[1]; c.Op != store.ChangeResync || c.Class != "Later" {
		t.Fatalf("backdated insert:\n%s", storetest.DescribeChanges(got))
	}
	// An own backdated create is known: no resync.
	if err := a.Create(ctx, "Later", []parse.Object{{"objectId": "old2", "createdAt": "2001-01-01T00:00:00.000Z", "updatedAt": "2001-01-01T00:00:00.000Z"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `UPDATE "Later" SET "v" = 8, "updatedAt" = ? WHERE "objectId" = 'r1'`, parse.FormatDate(time.Now().Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	got = r.WaitFor(t, 4)
	if len(got) != 4 || got[2].ObjectID != "old2" || got[2].Op != store.ChangeCreate || got[3].Op != store.ChangeUpdate || got[3].After["v"] != 8.0 {
		t.Fatalf("own backdated create then raw update:\n%s", storetest.DescribeChanges(got))
	}
}

// Close stops the feed: no delivery after it, and Watch on a closed store
// does nothing.
func TestFeedClose(t *testing.T) {
	ctx := context.Background()
	a, b, path := twoStores(t)
	r := &storetest.Recorder{}
	a.Watch(r.Add)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a.Watch(r.Add)()
	// The barrier: a third store polling the file as a did sees the
	// write, and then a second one; a live feed of a would have seen the
	// first by then.
	c, err := sqlite.Open(ctx, path, sqlite.WithPollInterval(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := &storetest.Recorder{}
	defer c.Watch(seen.Add)()
	for _, id := range []string{"x", "y"} {
		if err := b.Create(ctx, "Note", []parse.Object{{"objectId": id}}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second) // bounds a hang
		for !slices.ContainsFunc(seen.Changes(), func(c store.Change) bool { return c.ObjectID == id }) {
			if time.Now().After(deadline) {
				t.Fatalf("the barrier store never saw %s", id)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if got := r.Changes(); len(got) != 0 {
		t.Fatalf("changes after Close:\n%s", storetest.DescribeChanges(got))
	}
}

func same(a, b any) bool {
	return storetest.CanonEqual(a, b)
}

package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// The change feed (store.Feed), for the backends that implement it: the
// changes committed through the store arrive once each, in commit order,
// with the rows before and after as Find returns them.

var feedTests = []subtest{
	{"CreateUpdateDelete", testFeedCreateUpdateDelete},
	{"NoEventForFailedWrite", testFeedFailedWrites},
	{"CommitOrder", testFeedOrder},
	{"OnlyAfterWatch", testFeedOnlyAfterWatch},
	{"Cancel", testFeedCancel},
	{"ConcurrentWriters", testFeedConcurrent},
}

// FeedWait bounds how long the feed tests wait for an expected change.
var FeedWait = 10 * time.Second

// RunFeed runs only the change feed tests; Run runs them too, for stores
// that implement store.Feed. A backend whose feed has several modes (e.g.
// PostgreSQL with and without its change log installed) runs RunFeed once
// per mode.
func RunFeed(t *testing.T, open func(t *testing.T) store.Store) {
	runGroup(t, feedTests, open)
}

// Recorder collects the changes a watcher receives.
type Recorder struct {
	mu  sync.Mutex
	got []store.Change
}

// Add records c (a Watch callback).
func (r *Recorder) Add(c store.Change) {
	r.mu.Lock()
	r.got = append(r.got, c)
	r.mu.Unlock()
}

// Changes returns a copy of what was received so far.
func (r *Recorder) Changes() []store.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]store.Change(nil), r.got...)
}

// WaitFor waits (up to FeedWait) until n changes were received and returns
// them; it fails the test when they do not come.
func (r *Recorder) WaitFor(t testing.TB, n int) []store.Change {
	t.Helper()
	deadline := time.Now().Add(FeedWait)
	for {
		got := r.Changes()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %d changes, got %d:\n%s", FeedWait, n, len(got), DescribeChanges(got))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// DescribeChanges renders changes one a line, for failure messages.
func DescribeChanges(cs []store.Change) string {
	var b strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&b, "  %d: %s %s %s id=%q before=%s after=%s\n", i, c.Op, c.Class, c.ObjectID, c.ID, compact(c.Before), compact(c.After))
	}
	return b.String()
}

// watch registers a Recorder on s, skipping the test when s has no feed.
func watch(t *testing.T, s store.Store) (*Recorder, func()) {
	t.Helper()
	f, ok := s.(store.Feed)
	if !ok {
		t.Fatalf("%T does not implement store.Feed: RunFeed is for stores that do", s)
	}
	r := &Recorder{}
	cancel := f.Watch(r.Add)
	t.Cleanup(cancel)
	return r, cancel
}

// sameObject compares two rows by REST form.
func sameObject(t *testing.T, what string, got, want parse.Object) {
	t.Helper()
	if got == nil || want == nil {
		if got != nil || want != nil {
			t.Errorf("%s: got %s, want %s", what, compact(got), compact(want))
		}
		return
	}
	g, w := canon(t, got), canon(t, want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s differs:\n  %s", what, strings.Join(diff("", g, w, nil), "\n  "))
	}
}

// checkChange checks a change's operation, class, object and rows.
func checkChange(t *testing.T, what string, c store.Change, op store.ChangeOp, class, id string, before, after parse.Object) {
	t.Helper()
	if c.Op != op || c.Class != class || c.ObjectID != id {
		t.Errorf("%s: got %s %s %s, want %s %s %s", what, c.Op, c.Class, c.ObjectID, op, class, id)
	}
	if c.Time.IsZero() {
		t.Errorf("%s: no Time", what)
	}
	sameObject(t, what+" Before", c.Before, before)
	sameObject(t, what+" After", c.After, after)
}

// testFeedCreateUpdateDelete: one change per created object, and an
// update and a delete, each with the rows Find returned before and after
// (every field type, the ACL, the Relation markers).
func testFeedCreateUpdateDelete(t *testing.T, s store.Store) {
	createEverything(t, s)
	r, _ := watch(t, s)
	mustCreate(t, s, "Everything", []parse.Object{
		decodeObject(t, e1Row),
		decodeObject(t, `{"objectId": "e2", "createdAt": "2024-01-04T00:00:00.000Z", "num": 1}`),
	})
	e1, e2 := findOne(t, s, "Everything", "e1"), findOne(t, s, "Everything", "e2")
	sameObject(t, "e1 as stored", e1, decodeObject(t, e1Stored))
	before, after, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e1"}, decodeObject(t,
		`{"str": "changed", "flag": {"__op": "Delete"}, "ACL": {"role:Admin": {"read": true, "write": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e1After := findOne(t, s, "Everything", "e1")
	deleted, err := s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e2"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.WaitFor(t, 4)
	if len(got) != 4 {
		t.Fatalf("want 4 changes, got %d:\n%s", len(got), DescribeChanges(got))
	}
	checkChange(t, "create e1", got[0], store.ChangeCreate, "Everything", "e1", nil, e1)
	checkChange(t, "create e2", got[1], store.ChangeCreate, "Everything", "e2", nil, e2)
	checkChange(t, "update e1", got[2], store.ChangeUpdate, "Everything", "e1", e1, e1After)
	sameObject(t, "Update's before", before, e1)
	sameObject(t, "Update's after", after, e1After)
	if acl, _ := got[2].After[parse.FieldACL].(map[string]any); acl == nil || acl["role:Admin"] == nil || acl["*"] != nil {
		t.Errorf("update e1: After's ACL is %v", got[2].After[parse.FieldACL])
	}
	checkChange(t, "delete e2", got[3], store.ChangeDelete, "Everything", "e2", e2, nil)
	sameObject(t, "Delete's row", deleted, e2)
}

// testFeedFailedWrites: a write that fails (or is rolled back) reports
// nothing; the next committed write is the next change.
func testFeedFailedWrites(t *testing.T, s store.Store) {
	createEverything(t, s)
	mustCreate(t, s, "Everything", []parse.Object{decodeObject(t, `{"objectId": "x1", "num": 1, "ACL": {"u1": {"read": true, "write": true}}}`)})
	r, _ := watch(t, s)
	_, _, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "missing"}, parse.Object{"num": 2.0})
	wantErr(t, "update of a missing object", err, store.ErrObjectNotFound)
	_, _, err = s.Update(ctx, store.Write{Class: "Everything", ID: "x1", WriteACL: query.ACLEntries("*", "u2")}, parse.Object{"num": 2.0})
	wantErr(t, "update without write access", err, store.ErrObjectNotFound)
	_, _, err = s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "x1", Where: where(t, s, "Everything", `{"num": 5}`)}, parse.Object{"num": 2.0})
	wantErr(t, "update not matching the constraint", err, store.ErrObjectNotFound)
	_, err = s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "missing"})
	wantErr(t, "delete of a missing object", err, store.ErrObjectNotFound)
	_, err = s.Delete(ctx, store.Write{Class: "Everything", ID: "x1", WriteACL: query.ACLEntries("*")})
	wantErr(t, "delete without write access", err, store.ErrObjectNotFound)
	err = s.Create(ctx, "Everything", []parse.Object{{"objectId": "n1", "num": 1.0}, {"objectId": "x1", "num": 2.0}})
	if err == nil {
		t.Error("create of a duplicate objectId: no error")
	}
	err = s.Create(ctx, "Everything", []parse.Object{{"objectId": "n2", "num": 1.0, "nope": 1.0}})
	wantErr(t, "create with an unknown field", err, store.ErrInvalid)
	if findOne(t, s, "Everything", "n1") != nil {
		t.Fatal("the failed batch left n1 behind")
	}
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "s1", "num": 1.0}})
	got := r.WaitFor(t, 1)
	if len(got) != 1 || got[0].ObjectID != "s1" || got[0].Op != store.ChangeCreate {
		t.Fatalf("want only the create of s1, got:\n%s", DescribeChanges(got))
	}
}

// testFeedOrder: changes arrive in commit order.
func testFeedOrder(t *testing.T, s store.Store) {
	createEverything(t, s)
	r, _ := watch(t, s)
	type step struct {
		op  store.ChangeOp
		id  string
		num float64
	}
	var want []step
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "o1", "num": 0.0}})
	want = append(want, step{store.ChangeCreate, "o1", 0})
	for i := 1; i <= 10; i++ {
		if _, _, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "o1"}, parse.Object{"num": float64(i)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, step{store.ChangeUpdate, "o1", float64(i)})
	}
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "o2", "num": 100.0}, {"objectId": "o3", "num": 200.0}})
	want = append(want, step{store.ChangeCreate, "o2", 100}, step{store.ChangeCreate, "o3", 200})
	if _, err := s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "o1"}); err != nil {
		t.Fatal(err)
	}
	want = append(want, step{store.ChangeDelete, "o1", 10})
	if _, _, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "o2"}, parse.Object{"num": 101.0}); err != nil {
		t.Fatal(err)
	}
	want = append(want, step{store.ChangeUpdate, "o2", 101})
	got := r.WaitFor(t, len(want))
	if len(got) != len(want) {
		t.Fatalf("want %d changes, got:\n%s", len(want), DescribeChanges(got))
	}
	for i, w := range want {
		c := got[i]
		row := c.After
		if w.op == store.ChangeDelete {
			row = c.Before
		}
		if c.Op != w.op || c.ObjectID != w.id || row == nil || row["num"] != w.num {
			t.Fatalf("change %d: want %s %s num=%v, got:\n%s", i, w.op, w.id, w.num, DescribeChanges(got))
		}
		if w.op == store.ChangeUpdate && (c.Before == nil || c.Before["num"] == c.After["num"]) {
			t.Errorf("change %d: Before %v After %v", i, c.Before, c.After)
		}
	}
}

// testFeedOnlyAfterWatch: what was committed before Watch is not reported.
func testFeedOnlyAfterWatch(t *testing.T, s store.Store) {
	createEverything(t, s)
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "early", "num": 1.0}})
	r, _ := watch(t, s)
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "late", "num": 1.0}})
	got := r.WaitFor(t, 1)
	if len(got) != 1 || got[0].ObjectID != "late" {
		t.Fatalf("want only the create of late, got:\n%s", DescribeChanges(got))
	}
}

// testFeedCancel: a cancelled watcher receives nothing more; the others go
// on; cancel may be called twice.
func testFeedCancel(t *testing.T, s store.Store) {
	createEverything(t, s)
	r1, cancel1 := watch(t, s)
	r2, _ := watch(t, s)
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "c1", "num": 0.0}})
	r1.WaitFor(t, 1)
	r2.WaitFor(t, 1)
	cancel1()
	cancel1()
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "c2", "num": 0.0}})
	if _, _, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "c1"}, parse.Object{"num": 1.0}); err != nil {
		t.Fatal(err)
	}
	got2 := r2.WaitFor(t, 3)
	if len(got2) != 3 || got2[1].ObjectID != "c2" || got2[2].Op != store.ChangeUpdate {
		t.Fatalf("the remaining watcher got:\n%s", DescribeChanges(got2))
	}
	// Both watchers are served by one goroutine, in order: r1 would have
	// had c2 before r2 had the update.
	if got1 := r1.Changes(); len(got1) != 1 {
		t.Fatalf("the cancelled watcher got more:\n%s", DescribeChanges(got1))
	}
}

// testFeedConcurrent: concurrent writers and watchers; each committed
// change arrives exactly once, and each object's changes in order.
func testFeedConcurrent(t *testing.T, s store.Store) {
	createEverything(t, s)
	const writers, each = 4, 8
	f, ok := s.(store.Feed)
	if !ok {
		t.Fatalf("%T does not implement store.Feed: RunFeed is for stores that do", s)
	}
	watchers := make([]*Recorder, 3)
	var wg sync.WaitGroup
	for i := range watchers {
		watchers[i] = &Recorder{}
		wg.Go(func() { t.Cleanup(f.Watch(watchers[i].Add)) })
	}
	wg.Wait()
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%dn%d", w, i)
				if err := s.Create(ctx, "Everything", []parse.Object{{"objectId": id, "num": 0.0}}); err != nil {
					errs <- err
					return
				}
				if _, _, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: id}, parse.Object{"num": 1.0}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, r := range watchers {
		got := r.WaitFor(t, writers*each*2)
		if len(got) != writers*each*2 {
			t.Fatalf("watcher %d: %d changes, want %d:\n%s", i, len(got), writers*each*2, DescribeChanges(got))
		}
		seen := map[string]store.ChangeOp{}
		for _, c := range got {
			prev, ok := seen[c.ObjectID]
			switch {
			case c.Op == store.ChangeCreate && !ok, c.Op == store.ChangeUpdate && prev == store.ChangeCreate:
				seen[c.ObjectID] = c.Op
			default:
				t.Fatalf("watcher %d: %s %s after %q:\n%s", i, c.Op, c.ObjectID, prev, DescribeChanges(got))
			}
		}
	}
	n := mustCount(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Everything", Limit: -1})
	if n != writers*each {
		t.Fatalf("%d objects", n)
	}
}

// CanonEqual reports whether a and b have the same JSON form.
func CanonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

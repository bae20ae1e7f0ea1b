package subscribe

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

func TestIndexSemantics(t *testing.T) {
	x := NewIndex(Limits{})
	if l := x.Limits(); l.PerSession != DefaultPerSession || l.Sessions != DefaultSessions {
		t.Fatalf("default limits %+v", l)
	}
	must := func(session, uri string) {
		t.Helper()
		if err := x.Subscribe(session, uri); err != nil {
			t.Fatalf("Subscribe(%q, %q): %v", session, uri, err)
		}
	}
	must("s1", "parse://Ticket/count")
	must("s1", "parse://Ticket/count") // idempotent
	must("s1", "parse://Ticket/samples")
	must("s2", "parse://Ticket/count")
	must("s3", "parse://User/count")

	if !x.Has("s1", "parse://Ticket/samples") || x.Has("s2", "parse://Ticket/samples") || x.Has("nobody", "parse://Ticket/count") {
		t.Fatal("Has is wrong")
	}
	sorted := func(s []string) []string { slices.Sort(s); return s }
	if d := cmp.Diff([]string{"s1", "s2"}, sorted(x.Sessions("parse://Ticket/count"))); d != "" {
		t.Fatalf("Sessions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"parse://Ticket/count", "parse://Ticket/samples"}, sorted(x.URIs("s1"))); d != "" {
		t.Fatalf("URIs (-want +got):\n%s", d)
	}
	if x.Sessions("parse://None/count") != nil || x.URIs("nobody") != nil {
		t.Fatal("unknown keys should give nil")
	}
	// Sessions returns a copy.
	got := x.Sessions("parse://Ticket/count")
	got[0] = "mutated"
	if x.Has("mutated", "parse://Ticket/count") {
		t.Fatal("Sessions leaked internal state")
	}
	if d := cmp.Diff([]string{"parse://Ticket/count", "parse://Ticket/samples", "parse://User/count"}, sorted(x.SubscribedURIs())); d != "" {
		t.Fatalf("SubscribedURIs (-want +got):\n%s", d)
	}

	want := Snapshot{
		ByURI: map[string][]string{
			"parse://Ticket/count":   {"s1", "s2"},
			"parse://Ticket/samples": {"s1"},
			"parse://User/count":     {"s3"},
		},
		BySession: map[string][]string{
			"s1": {"parse://Ticket/count", "parse://Ticket/samples"},
			"s2": {"parse://Ticket/count"},
			"s3": {"parse://User/count"},
		},
		Sessions:      3,
		Subscriptions: 4,
	}
	if d := cmp.Diff(want, x.Snapshot()); d != "" {
		t.Fatalf("Snapshot (-want +got):\n%s", d)
	}

	if x.Unsubscribe("s2", "parse://Ticket/samples") || x.Unsubscribe("nobody", "parse://Ticket/count") || x.Unsubscribe("s2", "parse://None/count") {
		t.Fatal("Unsubscribe of a missing subscription reported true")
	}
	if !x.Unsubscribe("s2", "parse://Ticket/count") {
		t.Fatal("Unsubscribe of a held subscription reported false")
	}
	if x.Unsubscribe("s2", "parse://Ticket/count") {
		t.Fatal("second Unsubscribe reported true")
	}
	if d := cmp.Diff([]string{"parse://Ticket/count", "parse://Ticket/samples"}, x.RemoveSession("s1")); d != "" {
		t.Fatalf("RemoveSession (-want +got):\n%s", d)
	}
	if x.RemoveSession("s1") != nil {
		t.Fatal("RemoveSession twice returned URIs")
	}
	x.Prune("s3")
	x.Prune("s3")
	// No empty sets are left behind.
	want = Snapshot{ByURI: map[string][]string{}, BySession: map[string][]string{}}
	if d := cmp.Diff(want, x.Snapshot()); d != "" {
		t.Fatalf("empty Snapshot (-want +got):\n%s", d)
	}
	if s, n := x.Counts(); s != 0 || n != 0 {
		t.Fatalf("Counts = %d, %d", s, n)
	}

	for _, c := range [][2]string{{"", "u"}, {"s", ""}} {
		if err := x.Subscribe(c[0], c[1]); !errors.Is(err, ErrEmpty) {
			t.Fatalf("Subscribe(%q, %q) = %v, want ErrEmpty", c[0], c[1], err)
		}
	}
}

// The index keeps its own copies of session ids and URIs, so it does not
// pin the caller's (request) buffers.
func TestIndexClonesStrings(t *testing.T) {
	x := NewIndex(Limits{})
	req := "sessionA parse://Ticket/count"
	if err := x.Subscribe(req[:8], req[9:]); err != nil {
		t.Fatal(err)
	}
	base, end := uintptr(unsafe.Pointer(unsafe.StringData(req))), uintptr(len(req))
	inReq := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= base && p < base+end
	}
	if ss := x.Sessions("parse://Ticket/count"); len(ss) != 1 || ss[0] != "sessionA" || inReq(ss[0]) {
		t.Fatalf("session id %q aliases the request", ss)
	}
	if us := x.URIs("sessionA"); len(us) != 1 || us[0] != "parse://Ticket/count" || inReq(us[0]) {
		t.Fatalf("uri %q aliases the request", us)
	}
}

func TestIndexLimits(t *testing.T) {
	x := NewIndex(Limits{PerSession: 2, Sessions: 2})
	for _, u := range []string{"u1", "u2"} {
		if err := x.Subscribe("s1", u); err != nil {
			t.Fatal(err)
		}
	}
	err := x.Subscribe("s1", "u3")
	if !errors.Is(err, ErrTooManySubscriptions) {
		t.Fatalf("third subscription: %v, want ErrTooManySubscriptions", err)
	}
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != 2 || !strings.Contains(err.Error(), "limit is 2 per session") {
		t.Fatalf("error %q should name the limit 2", err)
	}
	if err := x.Subscribe("s1", "u2"); err != nil {
		t.Fatalf("idempotent re-subscribe at the cap: %v", err)
	}
	x.Unsubscribe("s1", "u1")
	if err := x.Subscribe("s1", "u3"); err != nil {
		t.Fatalf("after unsubscribing, below the cap: %v", err)
	}

	if err := x.Subscribe("s2", "u1"); err != nil {
		t.Fatal(err)
	}
	err = x.Subscribe("s3", "u1")
	if !errors.Is(err, ErrTooManySessions) {
		t.Fatalf("third session: %v, want ErrTooManySessions", err)
	}
	if !errors.As(err, &le) || le.Limit != 2 || !strings.Contains(err.Error(), "allows 2 sessions") {
		t.Fatalf("error %q should name the limit 2", err)
	}
	if err := x.Subscribe("s2", "u9"); err != nil {
		t.Fatalf("an existing session may still subscribe: %v", err)
	}
	if snap := x.Snapshot(); snap.Sessions != 2 || snap.BySession["s3"] != nil {
		t.Fatalf("refused session left state behind: %+v", snap)
	}
	// A session that unsubscribes from everything frees its slot.
	x.Unsubscribe("s2", "u1")
	x.Unsubscribe("s2", "u9")
	if err := x.Subscribe("s3", "u1"); err != nil {
		t.Fatalf("after s2 left: %v", err)
	}
	x.RemoveSession("s1")
	if err := x.Subscribe("s4", "u1"); err != nil {
		t.Fatalf("after RemoveSession: %v", err)
	}

	// Negative limits mean no limit.
	y := NewIndex(Limits{PerSession: -1, Sessions: -1})
	for i := range 300 {
		if err := y.Subscribe(fmt.Sprint("s", i%3), fmt.Sprint("u", i)); err != nil {
			t.Fatal(err)
		}
	}
	if s, n := y.Counts(); s != 3 || n != 300 {
		t.Fatalf("unlimited: Counts = %d, %d", s, n)
	}
}

// Many goroutines subscribe, unsubscribe and remove their own sessions on
// shared URIs while readers look up; each writer keeps a model of its own
// sessions, and the final index must equal the union of the models, with
// both directions consistent. Run with -race.
func TestIndexConcurrent(t *testing.T) {
	const (
		writers    = 16
		perWriter  = 8 // sessions per writer
		uris       = 24
		ops        = 3000
		perSession = 5
	)
	x := NewIndex(Limits{PerSession: perSession, Sessions: -1})
	uri := func(i int) string { return fmt.Sprintf("parse://C%d/count", i) }
	models := make([]map[string]map[string]bool, writers)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 4 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch (i + r) % 5 {
				case 0:
					_ = x.Sessions(uri(i % uris))
				case 1:
					_ = x.URIs(fmt.Sprintf("w%d-s%d", i%writers, i%perWriter))
				case 2:
					_ = x.Has(fmt.Sprintf("w%d-s%d", i%writers, i%perWriter), uri(i%uris))
				case 3:
					_, _ = x.Counts()
				case 4:
					if i%500 == 4 {
						checkConsistent(t, x.Snapshot())
					}
				}
				runtime.Gosched() // leave the writers room on small machines

			}
		})
	}
	var writersWG sync.WaitGroup
	for w := range writers {
		writersWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			model := map[string]map[string]bool{}
			for range ops {
				s := fmt.Sprintf("w%d-s%d", w, rng.IntN(perWriter))
				u := uri(rng.IntN(uris))
				switch p := rng.IntN(100); {
				case p < 55:
					err := x.Subscribe(s, u)
					switch {
					case model[s][u]:
						if err != nil {
							t.Errorf("re-subscribe %s %s: %v", s, u, err)
						}
					case len(model[s]) >= perSession:
						if !errors.Is(err, ErrTooManySubscriptions) {
							t.Errorf("subscribe %s %s at the cap: %v", s, u, err)
						}
					default:
						if err != nil {
							t.Errorf("subscribe %s %s: %v", s, u, err)
						}
						if model[s] == nil {
							model[s] = map[string]bool{}
						}
						model[s][u] = true
					}
				case p < 85:
					if got, want := x.Unsubscribe(s, u), model[s][u]; got != want {
						t.Errorf("Unsubscribe(%s, %s) = %v, want %v", s, u, got, want)
					}
					delete(model[s], u)
					if len(model[s]) == 0 {
						delete(model, s)
					}
				case p < 95:
					got := x.RemoveSession(s)
					var want []string
					for u := range model[s] {
						want = append(want, u)
					}
					slices.Sort(want)
					if d := cmp.Diff(want, got); d != "" {
						t.Errorf("RemoveSession(%s) (-want +got):\n%s", s, d)
					}
					delete(model, s)
				default:
					x.Prune(s)
					delete(model, s)
				}
			}
			models[w] = model
		})
	}
	writersWG.Wait()
	close(stop)
	readers.Wait()

	want := Snapshot{ByURI: map[string][]string{}, BySession: map[string][]string{}}
	for _, model := range models {
		for s, us := range model {
			for u := range us {
				want.BySession[s] = append(want.BySession[s], u)
				want.ByURI[u] = append(want.ByURI[u], s)
				want.Subscriptions++
			}
			want.Sessions++
		}
	}
	for _, l := range want.ByURI {
		slices.Sort(l)
	}
	for _, l := range want.BySession {
		slices.Sort(l)
	}
	got := x.Snapshot()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("final index (-model +index):\n%s", d)
	}
	checkConsistent(t, got)
}

// checkConsistent verifies that ByURI is the transpose of BySession and the
// counts match.
func checkConsistent(t *testing.T, s Snapshot) {
	t.Helper()
	n := 0
	for sess, us := range s.BySession {
		if len(us) == 0 {
			t.Errorf("session %s with an empty set", sess)
		}
		for _, u := range us {
			if _, ok := slices.BinarySearch(s.ByURI[u], sess); !ok {
				t.Errorf("%s → %s but not %s → %s", sess, u, u, sess)
			}
		}
		n += len(us)
	}
	m := 0
	for u, ss := range s.ByURI {
		if len(ss) == 0 {
			t.Errorf("uri %s with an empty set", u)
		}
		m += len(ss)
	}
	if n != m || n != s.Subscriptions || len(s.BySession) != s.Sessions {
		t.Errorf("counts: %d by session, %d by uri, Subscriptions %d, %d sessions vs Sessions %d", n, m, s.Subscriptions, len(s.BySession), s.Sessions)
	}
}

// sessionID looks like an MCP SDK session id (a random 26-character
// string).
func sessionID(i int) string { return fmt.Sprintf("S%025d", i) }

// indexBytesPerSubscription builds an index of sessions × perSession
// subscriptions over uris distinct URIs (0: every subscription its own
// URI) and returns the heap it holds, per subscription. The input strings
// exist before the measurement; the index's own copies are counted.
func indexBytesPerSubscription(sessions, perSession, uris int) float64 {
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = sessionID(i)
	}
	n := sessions * perSession
	if uris <= 0 {
		uris = n
	}
	us := make([]string, uris)
	for i := range us {
		us[i] = fmt.Sprintf("parse://Class%06d/samples", i)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := NewIndex(Limits{PerSession: -1, Sessions: -1})
	k := 0
	for _, id := range ids {
		for range perSession {
			if err := x.Subscribe(id, us[k%uris]); err != nil {
				panic(err)
			}
			k++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(x)
	runtime.KeepAlive(ids)
	runtime.KeepAlive(us)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// The memory target: ≤ 2 KiB per subscription, all-in, at 10,000
// sessions × 1 URI (the worst case: every URI distinct).
func TestIndexMemoryBudget(t *testing.T) {
	if testing.Short() {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs the memory budget: do not pass -short")
		}
		t.Skip("short")
	}
	per := indexBytesPerSubscription(10_000, 1, 0)
	t.Logf("10,000 sessions × 1 distinct URI: %.0f B/subscription", per)
	if per > 2048 {
		t.Fatalf("%.0f B per subscription, budget 2048", per)
	}
}

func BenchmarkIndexMemory(b *testing.B) {
	for _, c := range []struct {
		name                    string
		sessions, per, distinct int
	}{
		{"10k-sessions-x1-distinct-uris", 10_000, 1, 0},
		{"10k-sessions-x1-100-uris", 10_000, 1, 100},
		{"10k-sessions-x10-100-uris", 10_000, 10, 100},
	} {
		b.Run(c.name, func(b *testing.B) {
			var per float64
			for b.Loop() {
				per = indexBytesPerSubscription(c.sessions, c.per, c.distinct)
			}
			b.ReportMetric(per, "B/sub")
		})
	}
}

func BenchmarkIndexSubscribe(b *testing.B) {
	const pool = 1 << 14
	ids := make([]string, pool)
	us := make([]string, 128)
	for i := range ids {
		ids[i] = sessionID(i)
	}
	for i := range us {
		us[i] = fmt.Sprintf("parse://Class%03d/count", i)
	}
	// new: a fresh (session, uri) pair each time, then its unsubscribe
	// (so the index stays at pool size).
	b.Run("new-unsubscribe", func(b *testing.B) {
		x := NewIndex(Limits{PerSession: -1, Sessions: -1})
		i := 0
		for b.Loop() {
			s, u := ids[i%pool], us[(i/pool)%len(us)]
			_ = x.Subscribe(s, u)
			x.Unsubscribe(s, u)
			i++
		}
	})
	b.Run("existing", func(b *testing.B) {
		x := NewIndex(Limits{PerSession: -1, Sessions: -1})
		for i := range pool {
			_ = x.Subscribe(ids[i], us[i%len(us)])
		}
		i := 0
		for b.Loop() {
			_ = x.Subscribe(ids[i%pool], us[i%pool%len(us)])
			i++
		}
	})
	b.Run("parallel-mix", func(b *testing.B) {
		x := NewIndex(Limits{PerSession: -1, Sessions: -1})
		for i := range pool {
			_ = x.Subscribe(ids[i], us[i%len(us)])
		}
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
			for pb.Next() {
				s, u := ids[rng.IntN(pool)], us[rng.IntN(len(us))]
				switch rng.IntN(10) {
				case 0:
					_ = x.Subscribe(s, u)
				case 1:
					x.Unsubscribe(s, u)
				default:
					_ = x.Sessions(u)
				}
			}
		})
	})
}

func BenchmarkIndexSessions(b *testing.B) {
	x := NewIndex(Limits{PerSession: -1, Sessions: -1})
	for i := range 10_000 {
		_ = x.Subscribe(sessionID(i), fmt.Sprintf("parse://Class%03d/count", i%100))
	}
	u := "parse://Class007/count"
	for b.Loop() {
		if len(x.Sessions(u)) != 100 {
			b.Fatal("wrong")
		}
	}
}

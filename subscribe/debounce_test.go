package subscribe

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fireLog records the fires of a Debouncer.
type fireLog struct {
	mu    sync.Mutex
	at    map[string][]time.Time
	order []string
	hook  func(key string)
}

func newFireLog() *fireLog { return &fireLog{at: map[string][]time.Time{}} }

func (f *fireLog) fire(key string) {
	now := time.Now()
	f.mu.Lock()
	f.at[key] = append(f.at[key], now)
	f.order = append(f.order, key)
	hook := f.hook
	f.mu.Unlock()
	if hook != nil {
		hook(key)
	}
}

func (f *fireLog) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.at[key])
}

func (f *fireLog) times(key string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.at[key])
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// slack is how late a fire may be in these tests (race detector, loaded
// CI machines). The latency target itself is measured in bench/subscribe.
const slack = 500 * time.Millisecond

// barrier triggers a fresh key and waits for it to fire. Keys fire in
// Trigger order (one fixed window), so afterwards every key triggered
// before the barrier has fired, or never will.
func barrier(t *testing.T, d *Debouncer, f *fireLog) {
	t.Helper()
	key := fmt.Sprint("barrier-", time.Now().UnixNano())
	d.Trigger(key)
	waitFor(t, d.Window()+slack, "the barrier key", func() bool { return f.count(key) == 1 })
}

func TestDebouncerBurst(t *testing.T) {
	const window = 100 * time.Millisecond
	f := newFireLog()
	d := NewDebouncer(window, f.fire)
	defer d.Close()

	const keys, burst = 20, 100
	start := time.Now()
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() {
			key := Key(fmt.Sprint("session", k), "parse://Ticket/count")
			for range burst {
				d.Trigger(key)
			}
		})
	}
	wg.Wait()
	if n := d.Pending(); n != keys {
		t.Fatalf("Pending = %d, want %d", n, keys)
	}
	for k := range keys {
		key := Key(fmt.Sprint("session", k), "parse://Ticket/count")
		waitFor(t, window+slack, "fire of "+key, func() bool { return f.count(key) >= 1 })
		got := f.times(key)[0].Sub(start)
		if got < window {
			t.Errorf("%s fired after %v, before the window %v", key, got, window)
		}
		if got > window+slack {
			t.Errorf("%s fired after %v, want ≤ %v", key, got, window+slack)
		}
	}
	barrier(t, d, f)
	for k := range keys {
		key := Key(fmt.Sprint("session", k), "parse://Ticket/count")
		if n := f.count(key); n != 1 {
			t.Errorf("%s fired %d times for one burst, want 1", key, n)
		}
	}
	if n := d.Pending(); n != 0 {
		t.Fatalf("Pending = %d after the fires", n)
	}

	// The next event after a fire starts a new burst.
	key := Key("session0", "parse://Ticket/count")
	d.Trigger(key)
	waitFor(t, window+slack, "second burst", func() bool { return f.count(key) == 2 })
}

// A continuous stream of events is not starved: the first fire comes one
// window after the stream starts, then about one per window.
func TestDebouncerContinuousStream(t *testing.T) {
	const window = 50 * time.Millisecond
	f := newFireLog()
	d := NewDebouncer(window, f.fire)
	defer d.Close()
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			d.Trigger("k")
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	waitFor(t, 4*window+slack, "three fires during the stream", func() bool { return f.count("k") >= 3 })
	close(stop)
	wg.Wait()
	ts := f.times("k")
	if first := ts[0].Sub(start); first > window+slack {
		t.Fatalf("first fire after %v of continuous events, want ≈ %v", first, window)
	}
	for i := 1; i < len(ts); i++ {
		if gap := ts[i].Sub(ts[i-1]); gap < window/2 {
			t.Fatalf("fires %v apart, want about one per window (%v)", gap, window)
		}
	}
}

// Keys are independent: a later key neither delays nor absorbs an earlier
// one.
func TestDebouncerKeysIndependent(t *testing.T) {
	const window = 80 * time.Millisecond
	f := newFireLog()
	d := NewDebouncer(window, f.fire)
	defer d.Close()
	a, b := Key("s1", "u"), Key("s2", "u")
	t0 := time.Now()
	d.Trigger(a)
	time.Sleep(window / 2) // spacing the triggers, not an assertion
	tb := time.Now()
	d.Trigger(b)
	d.Trigger(a) // coalesced into a's burst
	waitFor(t, window+slack, "both fires", func() bool { return f.count(a) == 1 && f.count(b) == 1 })
	fa, fb := f.times(a)[0], f.times(b)[0]
	if fa.Sub(t0) > window+slack || fb.Sub(tb) < window {
		t.Fatalf("a fired after %v, b %v after its trigger", fa.Sub(t0), fb.Sub(tb))
	}
	if !fa.Before(fb) {
		t.Fatal("b's trigger delayed a")
	}
	barrier(t, d, f)
	if f.count(a) != 1 || f.count(b) != 1 {
		t.Fatalf("fires: a %d, b %d", f.count(a), f.count(b))
	}
}

func TestDebouncerCancel(t *testing.T) {
	const window = 60 * time.Millisecond
	f := newFireLog()
	d := NewDebouncer(window, f.fire)
	defer d.Close()

	k1, k2, k3 := Key("s1", "u1"), Key("s1", "u2"), Key("s2", "u1")
	k10 := Key("s10", "u1") // shares the prefix "s1" but is another session
	for _, k := range []string{k1, k2, k3, k10} {
		d.Trigger(k)
	}
	if !d.Cancel(k3) || d.Cancel(k3) || d.Cancel("never") {
		t.Fatal("Cancel results")
	}
	if n := d.CancelSession("s1"); n != 2 {
		t.Fatalf("CancelSession = %d, want 2", n)
	}
	if n := d.CancelSession("s1"); n != 0 {
		t.Fatalf("second CancelSession = %d", n)
	}
	if n := d.Pending(); n != 1 {
		t.Fatalf("Pending = %d, want 1 (s10)", n)
	}
	waitFor(t, window+slack, "s10's fire", func() bool { return f.count(k10) == 1 })
	barrier(t, d, f)
	for _, k := range []string{k1, k2, k3} {
		if f.count(k) != 0 {
			t.Errorf("cancelled %q fired", k)
		}
	}

	// Cancelling the head of the queue, and keys in the middle of a
	// session's list, leaves the rest intact.
	var keys []string
	for i := range 10 {
		k := Key(fmt.Sprint("s", i%3), fmt.Sprint("u", i))
		keys = append(keys, k)
		d.Trigger(k)
	}
	d.Cancel(keys[0])
	d.Cancel(keys[4])
	d.CancelSession("s2")
	want := map[string]int{}
	for i, k := range keys {
		if i != 0 && i != 4 && i%3 != 2 {
			want[k] = 1
		}
	}
	waitFor(t, window+slack, "the remaining fires", func() bool {
		for k := range want {
			if f.count(k) != 1 {
				return false
			}
		}
		return true
	})
	barrier(t, d, f)
	for _, k := range keys {
		if f.count(k) != want[k] {
			t.Errorf("%q fired %d times, want %d", k, f.count(k), want[k])
		}
	}
}

// fire runs without the lock: it may Trigger (here: re-arm its own key
// once) and Cancel.
func TestDebouncerReentrant(t *testing.T) {
	f := newFireLog()
	var d *Debouncer
	var again atomic.Bool
	f.hook = func(key string) {
		d.Cancel("other")
		if key == "k" && !again.Swap(true) {
			d.Trigger("k")
		}
	}
	d = NewDebouncer(30*time.Millisecond, f.fire)
	defer d.Close()
	d.Trigger("k")
	waitFor(t, time.Second, "two fires of k", func() bool { return f.count("k") == 2 })
}

func TestDebouncerClose(t *testing.T) {
	f := newFireLog()
	d := NewDebouncer(time.Hour, f.fire)
	if d.Window() != time.Hour {
		t.Fatal("window")
	}
	d.Trigger("a")
	d.Close()
	d.Close()
	d.Trigger("b")
	if n := d.Pending(); n != 0 {
		t.Fatalf("Pending after Close = %d", n)
	}
	d0 := NewDebouncer(0, f.fire)
	defer d0.Close()
	if d0.Window() != DefaultWindow {
		t.Fatal("default window")
	}
}

func TestKey(t *testing.T) {
	s, u := SplitKey(Key("sess", "parse://A/count"))
	if s != "sess" || u != "parse://A/count" {
		t.Fatalf("SplitKey = %q, %q", s, u)
	}
	if s, u := SplitKey("plain"); s != "plain" || u != "" {
		t.Fatalf("SplitKey(plain) = %q, %q", s, u)
	}
}

// 10,000 keys pending at once all fire exactly once, in about one window.
func TestDebouncerManyKeys(t *testing.T) {
	const window, n = 100 * time.Millisecond, 10_000
	var fired atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	trig := make(map[string]time.Time, n)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = Key(sessionID(i), "parse://Ticket/count")
	}
	d := NewDebouncer(window, func(key string) {
		now := time.Now()
		mu.Lock()
		lat = append(lat, now.Sub(trig[key]))
		mu.Unlock()
		fired.Add(1)
	})
	defer d.Close()
	for _, k := range keys {
		mu.Lock()
		trig[k] = time.Now()
		mu.Unlock()
		d.Trigger(k)
		d.Trigger(k)
	}
	waitFor(t, 5*time.Second, "10,000 fires", func() bool { return fired.Load() >= n })
	// A sentinel key fires after every key triggered before it: then no
	// duplicate can be still to come.
	mu.Lock()
	trig["sentinel"] = time.Now()
	mu.Unlock()
	d.Trigger("sentinel")
	waitFor(t, window+slack, "the sentinel", func() bool { return fired.Load() >= n+1 })
	if got := fired.Load(); got != n+1 {
		t.Fatalf("%d fires, want %d", got-1, n)
	}
	mu.Lock()
	lat = lat[:n]
	slices.Sort(lat)
	p50, p99, mx := lat[n/2], lat[n*99/100], lat[n-1]
	mu.Unlock()
	t.Logf("10,000 keys, window %v: latency p50 %v, p99 %v, max %v", window, p50, p99, mx)
	if lat[0] < window {
		t.Fatalf("a key fired after %v, before the window", lat[0])
	}
}

func BenchmarkDebouncerTrigger(b *testing.B) {
	keys := make([]string, 1<<14)
	for i := range keys {
		keys[i] = Key(sessionID(i), "parse://Ticket/count")
	}
	// coalesced: the key is already pending (the common case in a burst).
	b.Run("coalesced", func(b *testing.B) {
		d := NewDebouncer(time.Hour, func(string) {})
		defer d.Close()
		for _, k := range keys {
			d.Trigger(k)
		}
		i := 0
		for b.Loop() {
			d.Trigger(keys[i%len(keys)])
			i++
		}
	})
	// arm: a new burst (then cancelled, to keep the queue bounded).
	b.Run("arm-cancel", func(b *testing.B) {
		d := NewDebouncer(time.Hour, func(string) {})
		defer d.Close()
		i := 0
		for b.Loop() {
			k := keys[i%len(keys)]
			d.Trigger(k)
			d.Cancel(k)
			i++
		}
	})
	// fire: arm and fire with a 1 ms window, the full cycle.
	b.Run("arm-fire", func(b *testing.B) {
		var fired atomic.Int64
		d := NewDebouncer(time.Millisecond, func(string) { fired.Add(1) })
		defer d.Close()
		i := 0
		for b.Loop() {
			d.Trigger(keys[i%len(keys)])
			i++
		}
		for d.Pending() > 0 {
			time.Sleep(time.Millisecond)
		}
		b.ReportMetric(float64(fired.Load())/float64(i), "fires/trigger")
	})
	b.Run("parallel-coalesced", func(b *testing.B) {
		d := NewDebouncer(time.Hour, func(string) {})
		defer d.Close()
		for _, k := range keys {
			d.Trigger(k)
		}
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(next.Add(1000))
			for pb.Next() {
				d.Trigger(keys[i%len(keys)])
				i++
			}
		})
	})
}

// Memory of a pending key (the key string is the caller's and not
// counted).
func BenchmarkDebouncerPendingMemory(b *testing.B) {
	const n = 10_000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = Key(sessionID(i), "parse://Ticket/count")
	}
	var per float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d := NewDebouncer(time.Hour, func(string) {})
		for _, k := range keys {
			d.Trigger(k)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per = float64(after.HeapAlloc-before.HeapAlloc) / n
		d.Close()
	}
	b.ReportMetric(per, "B/key")
}

package subscribe

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// fireLog records the fires of a Debouncer.
type fireLog struct {
	now   func() time.Time // time.Now unless set
	mu    sync.Mutex
	at    map[string][]time.Time
	order []string
	hook  func(key string)
}

func newFireLog() *fireLog { return &fireLog{at: map[string][]time.Time{}} }

func (f *fireLog) fire(key string) {
	now := time.Now()
	if f.now != nil {
		now = f.now()
	}
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

// hang bounds every wait for a fire: it only stops a test that hangs
// (a fire may be late on a loaded machine; lateness is not what these
// tests check). The latency target itself is measured in bench/subscribe.
const hang = 30 * time.Second

// barrier triggers a fresh key and waits for it to fire. Keys fire in
// Trigger order (one fixed window), so afterwards every key triggered
// before the barrier has fired, or never will.
func barrier(t *testing.T, d *Debouncer, f *fireLog) {
	t.Helper()
	key := fmt.Sprint("barrier-", time.Now().UnixNano())
	d.Trigger(key)
	waitFor(t, hang, "the barrier key", func() bool { return f.count(key) == 1 })
}

// fakeDebouncer is a Debouncer on a fake clock whose fires f records
// with the fake time.
func fakeDebouncer(t *testing.T, window time.Duration) (*Debouncer, *fireLog, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClock()
	f := newFireLog()
	f.now = clock.Now
	d := NewDebouncer(window, f.fire, DebounceClock(clock))
	t.Cleanup(d.Close)
	return d, f, clock
}

// advance moves the fake clock by by once the Debouncer waits on it (a
// key is armed): advancing earlier could slip between its reading the
// clock and setting its timer.
func advance(t *testing.T, clock *clockwork.FakeClock, by time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds a hang
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("the debouncer never waited on its clock: %v", err)
	}
	clock.Advance(by)
}

// A burst of triggers per key fires once per key, exactly one window
// after its first trigger and not before; the next trigger starts a new
// burst.
func TestDebouncerBurst(t *testing.T) {
	const window = 100 * time.Millisecond
	d, f, clock := fakeDebouncer(t, window)
	start := clock.Now()

	const keys, burst = 20, 100
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
	advance(t, clock, window-time.Nanosecond)
	// The goroutine's timer has not expired: nothing can have fired.
	if n := d.Pending(); n != keys {
		t.Fatalf("Pending = %d before the window ended, want %d", n, keys)
	}
	advance(t, clock, time.Nanosecond)
	waitFor(t, 10*time.Second, "every key's fire", func() bool { return d.Pending() == 0 })
	for k := range keys {
		key := Key(fmt.Sprint("session", k), "parse://Ticket/count")
		ts := f.times(key)
		if len(ts) != 1 {
			t.Fatalf("%s fired %d times for one burst, want 1", key, len(ts))
		}
		if got := ts[0].Sub(start); got != window {
			t.Errorf("%s fired %v after its first trigger, want exactly the window %v", key, got, window)
		}
	}

	// The next event after a fire starts a new burst.
	key := Key("session0", "parse://Ticket/count")
	d.Trigger(key)
	advance(t, clock, window)
	waitFor(t, 10*time.Second, "second burst", func() bool { return f.count(key) == 2 })
	if got := f.times(key)[1].Sub(start); got != 2*window {
		t.Fatalf("the second burst fired at %v, want %v", got, 2*window)
	}
	if n := len(f.order); n != keys+1 {
		t.Fatalf("%d fires in all, want %d", n, keys+1)
	}
}

// A continuous stream of events is not starved: the first fire comes one
// window after the stream starts, then exactly one per window.
func TestDebouncerContinuousStream(t *testing.T) {
	const window, step = 50 * time.Millisecond, 5 * time.Millisecond
	d, f, clock := fakeDebouncer(t, window)
	start := clock.Now()
	const windows = 10
	for i := 1; i <= windows*int(window/step); i++ {
		d.Trigger("k")
		advance(t, clock, step)
		if clock.Since(start)%window == 0 { // a window ended: its fire is due
			n := int(clock.Since(start) / window)
			waitFor(t, 10*time.Second, fmt.Sprintf("fire %d", n), func() bool { return f.count("k") == n && !d.Armed("k") })
		}
	}
	ts := f.times("k")
	if len(ts) != windows {
		t.Fatalf("%d fires in %d windows of continuous events, want %d", len(ts), windows, windows)
	}
	for i, at := range ts {
		if got := at.Sub(start); got != time.Duration(i+1)*window {
			t.Fatalf("fire %d at %v, want %v", i+1, got, time.Duration(i+1)*window)
		}
	}
}

// Keys are independent: a later key neither delays nor absorbs an earlier
// one.
func TestDebouncerKeysIndependent(t *testing.T) {
	const window = 80 * time.Millisecond
	d, f, clock := fakeDebouncer(t, window)
	a, b := Key("s1", "u"), Key("s2", "u")
	t0 := clock.Now()
	d.Trigger(a)
	advance(t, clock, window/2)
	d.Trigger(b)
	d.Trigger(a) // coalesced into a's burst
	advance(t, clock, window/2)
	waitFor(t, 10*time.Second, "a's fire", func() bool { return f.count(a) == 1 })
	if f.count(b) != 0 || !d.Armed(b) {
		t.Fatalf("b fired %d times before its window ended", f.count(b))
	}
	advance(t, clock, window/2)
	waitFor(t, 10*time.Second, "b's fire", func() bool { return f.count(b) == 1 })
	if fa, fb := f.times(a)[0].Sub(t0), f.times(b)[0].Sub(t0); fa != window || fb != window/2+window {
		t.Fatalf("a fired at %v, b at %v; want %v and %v", fa, fb, window, window/2+window)
	}
	if f.count(a) != 1 || d.Pending() != 0 || !slices.Equal(f.order, []string{a, b}) {
		t.Fatalf("fires: %v, pending %d", f.order, d.Pending())
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
	waitFor(t, hang, "s10's fire", func() bool { return f.count(k10) == 1 })
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
	waitFor(t, hang, "the remaining fires", func() bool {
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
	waitFor(t, hang, "two fires of k", func() bool { return f.count("k") == 2 })
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
	waitFor(t, hang, "10,000 fires", func() bool { return fired.Load() >= n })
	// A sentinel key fires after every key triggered before it: then no
	// duplicate can be still to come.
	mu.Lock()
	trig["sentinel"] = time.Now()
	mu.Unlock()
	d.Trigger("sentinel")
	waitFor(t, hang, "the sentinel", func() bool { return fired.Load() >= n+1 })
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

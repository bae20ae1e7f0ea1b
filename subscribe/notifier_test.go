package subscribe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// inbox collects the messages a listener receives.
type inbox struct {
	mu  sync.Mutex
	got []Message
}

func (b *inbox) add(m Message) {
	b.mu.Lock()
	b.got = append(b.got, Message{ID: m.ID, Payload: bytes.Clone(m.Payload)})
	b.mu.Unlock()
}

func (b *inbox) count(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, m := range b.got {
		if m.ID == id {
			n++
		}
	}
	return n
}

func (b *inbox) find(id string) (Message, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.got {
		if m.ID == id {
			return m, true
		}
	}
	return Message{}, false
}

func (b *inbox) ids() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.got {
		out = append(out, m.ID)
	}
	return out
}

func TestLocalNotifier(t *testing.T) {
	ctx := context.Background()
	n := NewLocal()
	if err := WaitReady(ctx, n); err != nil {
		t.Fatal(err)
	}
	var a, b inbox
	cancelA := n.Listen(a.add)
	cancelB := n.Listen(b.add)
	n.Listen(nil)()
	if err := n.Publish(ctx, Message{ID: "1", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	cancelA()
	cancelA()
	if err := n.Publish(ctx, Message{ID: "2"}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"1"}, a.ids()); d != "" {
		t.Fatalf("a (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"1", "2"}, b.ids()); d != "" {
		t.Fatalf("b (-want +got):\n%s", d)
	}
	if m, _ := b.find("1"); string(m.Payload) != "x" {
		t.Fatalf("payload %q", m.Payload)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := n.Publish(cctx, Message{ID: "3"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a done context: %v", err)
	}
	cancelB()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Publish(ctx, Message{ID: "4"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
	if b.count("3") != 0 || b.count("4") != 0 {
		t.Fatal("delivered after cancel or close")
	}
}

// Listeners can be added and cancelled while messages flow (-race).
func TestListenersConcurrent(t *testing.T) {
	n := NewLocal()
	defer n.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				var b inbox
				cancel := n.Listen(b.add)
				_ = n.Publish(context.Background(), Message{ID: fmt.Sprint(i, "-", j)})
				if b.count(fmt.Sprint(i, "-", j)) != 1 {
					t.Errorf("own message not delivered once")
				}
				cancel()
			}
		})
	}
	wg.Wait()
}

func TestDedup(t *testing.T) {
	d := NewDedup(2)
	if d.Seen("a") || !d.Seen("a") {
		t.Fatal("a: first false, then true")
	}
	if d.Seen("b") || d.Seen("c") { // evicts a
		t.Fatal("b, c new")
	}
	if d.Seen("a") {
		t.Fatal("a should have been evicted")
	}
	for range 3 {
		if d.Seen("") || d.Seen(ResyncID) {
			t.Fatal("empty and resync ids are never duplicates")
		}
	}
	if NewDedup(0).c.Len() != 0 {
		t.Fatal("default size")
	}
}

func TestFrame(t *testing.T) {
	for _, m := range []Message{
		{},
		{ID: "x"},
		{ID: "obj:Ticket:abc@2026-01-01T00:00:00Z", Payload: []byte("{\"class\":\"Ticket\"}")},
		{ID: "\x00\xff", Payload: []byte{0, 1, 2, 255}},
		{ID: string(make([]byte, 300)), Payload: make([]byte, 70000)},
	} {
		origin, got, err := decodeFrame(string(encodeFrame("inst", m)))
		if err != nil || origin != "inst" || got.ID != m.ID || !bytes.Equal(got.Payload, m.Payload) {
			t.Fatalf("round trip of %q: %q %q %v", m.ID, origin, got.ID, err)
		}
	}
	for _, bad := range []string{"", "\x02", "\x01", "\x01\x05ab", "\x01\x00", "\x01\x00\x09abc", "\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
		if _, _, err := decodeFrame(bad); !errors.Is(err, errBadFrame) {
			t.Fatalf("decodeFrame(%q) = %v, want errBadFrame", bad, err)
		}
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add(string(encodeFrame("o", Message{ID: "i", Payload: []byte("p")})))
	f.Add("\x01\x00\x00")
	f.Add("\x01\xff\xff\xff\xff\xff\xff\xff\xff\x01")
	f.Fuzz(func(t *testing.T, s string) {
		origin, m, err := decodeFrame(s)
		if err != nil {
			return
		}
		o2, m2, err := decodeFrame(string(encodeFrame(origin, m)))
		if err != nil || o2 != origin || m2.ID != m.ID || !bytes.Equal(m2.Payload, m.Payload) {
			t.Fatalf("%q does not survive a round trip: %v", s, err)
		}
	})
}

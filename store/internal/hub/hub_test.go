package hub

import (
	"sync"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/store"
)

// The hub delivers in publication order, only what was published after a
// watcher registered, survives a panicking watcher, and stops on cancel
// and on Close.
func TestHub(t *testing.T) {
	var h Hub
	h.Publish(store.Change{ObjectID: "unwatched"})
	var mu sync.Mutex
	var a, b []string
	wait := func(list *[]string, n int) []string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			got := append([]string(nil), (*list)...)
			mu.Unlock()
			if len(got) >= n {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("got %v, want %d", got, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	cancelA := h.Watch(func(c store.Change) {
		mu.Lock()
		a = append(a, c.ObjectID)
		mu.Unlock()
		if c.ObjectID == "boom" {
			panic("watcher bug")
		}
	})
	for _, id := range []string{"1", "boom", "2"} {
		h.Publish(store.Change{ObjectID: id})
	}
	wait(&a, 3)
	h.Watch(func(c store.Change) {
		mu.Lock()
		b = append(b, c.ObjectID)
		mu.Unlock()
	})
	h.Publish(store.Change{ObjectID: "3"})
	if got := wait(&b, 1); len(got) != 1 || got[0] != "3" {
		t.Fatalf("second watcher: %v", got)
	}
	cancelA()
	cancelA()
	h.Publish(store.Change{ObjectID: "4"})
	wait(&b, 2)
	if got := wait(&a, 4); len(got) != 4 || got[0] != "1" || got[1] != "boom" || got[2] != "2" || got[3] != "3" {
		t.Fatalf("first watcher: %v", got)
	}
	h.Close()
	h.Publish(store.Change{ObjectID: "5"})
	h.Watch(func(store.Change) { t.Error("a watcher registered after Close was called") })()
	if h.Watching() {
		t.Fatal("watchers after Close")
	}
}

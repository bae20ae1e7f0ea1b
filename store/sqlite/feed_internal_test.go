package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// waitPolls waits until the poller made n more polls.
func waitPolls(t *testing.T, s *Store, n int64) {
	t.Helper()
	target := s.feed.polls.Load() + n
	deadline := time.Now().Add(5 * time.Second)
	for s.feed.polls.Load() < target {
		if time.Now().After(deadline) {
			t.Fatalf("the poller made %d polls in 5s", s.feed.polls.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// Polling is cheap: no scan while data_version stays; one after a commit.
func TestPollScansOnlyWhenDataVersionMoves(t *testing.T) {
	ctx := context.Background()
	s, err := Create(ctx, filepath.Join(t.TempDir(), "p.db"), WithPollInterval(2*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer s.Watch(func(store.Change) {})()
	waitPolls(t, s, 3) // the baseline's index creation moves data_version once
	scans := s.feed.scans.Load()
	waitPolls(t, s, 20)
	if got := s.feed.scans.Load(); got != scans {
		t.Fatalf("%d scans while nothing was written", got-scans)
	}
	if err := s.CreateClass(ctx, parse.NewSchema("Thing")); err != nil {
		t.Fatal(err)
	}
	waitPolls(t, s, 3)
	if got := s.feed.scans.Load(); got == scans {
		t.Fatal("no scan after a commit")
	}
}

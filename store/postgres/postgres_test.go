package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Each subtest gets a fresh schema in the run's own database.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		var b [6]byte
		_, _ = rand.Read(b[:])
		url := pgtest.Schema(t, "s_"+hex.EncodeToString(b[:]))
		st, err := postgres.Create(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// The feed tests again with the change log installed: the changes then
// come from the log (IDs "pg:<seq>"), not from the writing Store.
func TestFeedConformanceInstalled(t *testing.T) {
	storetest.RunFeed(t, func(t *testing.T) store.Store {
		var b [6]byte
		_, _ = rand.Read(b[:])
		url := pgtest.Schema(t, "f_"+hex.EncodeToString(b[:]))
		st, err := postgres.Create(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.InstallChangeFeed(context.Background()); err != nil {
			t.Fatal(err)
		}
		return &logOnly{st, t}
	})
}

// logOnly checks that every change a watcher receives came from the log.
type logOnly struct {
	*postgres.Store
	t *testing.T
}

func (l *logOnly) Watch(fn func(store.Change)) func() {
	cancel := l.Store.Watch(func(c store.Change) {
		if !strings.HasPrefix(c.ID, "pg:") {
			l.t.Errorf("a change not from the log: %+v", c)
		}
		fn(c)
	})
	if !l.FeedUsesLog() {
		l.t.Error("the feed does not read the installed log")
	}
	return cancel
}

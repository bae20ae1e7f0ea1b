package pgtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/store/postgres"
)

// LockClass holds an exclusive lock on class's table until the returned
// function (also run at cleanup) releases it. A statement on the class
// then waits in the database, holding a connection and using no CPU,
// until the test lets go: a "slow query" whose end no machine's speed
// decides, for tests of cancellation and of other clients' calls.
func LockClass(t testing.TB, st *postgres.Store, class string) (release func()) {
	t.Helper()
	ctx := context.Background()
	// A connection of its own: the lock takes nothing from st's pool,
	// whose size some tests measure.
	conn, err := pgx.ConnectConfig(ctx, st.Pool().Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, `LOCK TABLE "`+class+`" IN ACCESS EXCLUSIVE MODE`)
	}
	if err != nil {
		_ = conn.Close(ctx)
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = tx.Rollback(ctx)
			_ = conn.Close(ctx)
		})
	}
	t.Cleanup(release)
	return release
}

// Active counts the client statements reading class that run in st's
// database (the caller's own query not included).
func Active(t testing.TB, st *postgres.Store, class string) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'
		AND query LIKE '%FROM "`+class+`"%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// WaitActive waits until want statements reading class run; its deadline
// (a minute) only bounds a hang.
func WaitActive(t testing.TB, st *postgres.Store, class string, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for Active(t, st, class) != want {
		if time.Now().After(deadline) {
			t.Fatalf("statements on %s: %d, want %d", class, Active(t, st, class), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

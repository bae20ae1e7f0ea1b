package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// The pool is sized for the server (not pgx's max(4, CPUs)); the URL's
// pool_max_conns and WithMaxConns (serve --db-max-conns, which wins)
// change it.
func TestPoolSize(t *testing.T) {
	url := pgtest.Schema(t, "pool")
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		name string
		url  string
		opts []postgres.Option
		want int32
	}{
		{"default", url, nil, postgres.DefaultMaxConns},
		{"pool_max_conns", url + sep + "pool_max_conns=7", nil, 7},
		{"flag", url, []postgres.Option{postgres.WithMaxConns(5)}, 5},
		{"flag over URL", url + sep + "pool_max_conns=7", []postgres.Option{postgres.WithMaxConns(9)}, 9},
	} {
		st, err := postgres.Create(context.Background(), c.url, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Pool().Config().MaxConns; got != c.want {
			t.Errorf("%s: pool of %d, want %d", c.name, got, c.want)
		}
		st.Close()
	}
}

package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/parsemcp/parsemcp/internal/pgtest"
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
		st, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/storetest"
)

// TestMatchLinguisticCollation runs the query.Match differential on a
// database whose default collation is linguistic (ICU "en", as a Parse
// Server database created with LOCALE en_US.UTF-8 orders text): string
// comparisons still order by code point, as Match does.
func TestMatchLinguisticCollation(t *testing.T) {
	ctx := context.Background()
	base := pgtest.URL(t)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := "parsemcp_icu_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{db}.Sanitize()+
		` TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8' LOCALE_PROVIDER icu ICU_LOCALE 'en'`); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI requires a PostgreSQL built with ICU (a database with an ICU collation): %v", err)
		}
		t.Skipf("no database with an ICU collation on this server: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), `DROP DATABASE `+pgx.Identifier{db}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("drop %s: %v", db, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	dbURL := u.String()

	storetest.RunMatch(t, func(t *testing.T) store.Store {
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "m_" + hex.EncodeToString(b[:])
		c, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		su := *u
		q := su.Query()
		q.Set("search_path", schema)
		su.RawQuery = q.Encode()
		st, err := postgres.Create(ctx, su.String())
		if err != nil {
			t.Fatal(err)
		}
		// The premise: this database orders text as a dictionary does,
		// alpha before B (by code point, B comes first).
		var linguistic bool
		if err := st.Pool().QueryRow(ctx, `SELECT 'alpha' < 'B'`).Scan(&linguistic); err != nil || !linguistic {
			t.Fatalf("the database's default collation orders B before alpha (%v, %v)", linguistic, err)
		}
		return st
	})
}

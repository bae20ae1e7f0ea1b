package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

// ReadOnlyRole creates a login role that may only read the tables of the
// schema u's connections use (USAGE on the schema, SELECT on its tables:
// the recipe of docs/POSTGRES.md), and returns u for that role. The role
// is dropped when the test ends.
func ReadOnlyRole(t testing.TB, u string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "parsemcp_ro_" + hex.EncodeToString(b[:])
	var schema string
	if err := c.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	r, s := pgx.Identifier{role}.Sanitize(), pgx.Identifier{schema}.Sanitize()
	for _, st := range []string{
		`CREATE ROLE ` + r + ` LOGIN`,
		`GRANT USAGE ON SCHEMA ` + s + ` TO ` + r,
		`GRANT SELECT ON ALL TABLES IN SCHEMA ` + s + ` TO ` + r,
	} {
		if _, err := c.Exec(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, `DROP OWNED BY `+r)
		_, _ = c.Exec(ctx, `DROP ROLE `+r)
	})
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	pu.User = url.User(role)
	return pu.String()
}

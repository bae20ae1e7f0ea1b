package main

import (
	"context"
	neturl "net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
)

// migrate installs the change feed in a fresh PostgreSQL database and,
// run again, finds everything in place; a SQLite store needs nothing.
func TestMigrateCommand(t *testing.T) {
	url := pgtest.Schema(t, "e2e_migrate")
	// The schema's name (e2e_migrate_2, … when the test runs again in the
	// same process, as with -count).
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	schema := u.Query().Get("search_path")
	stdout, stderr, code := run(t, nil, "migrate", "--store", url)
	if code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"created the change log table " + schema + "._parsemcp_changes", "trigger function created", "triggers added to 3 classes: _Role, _Session, _User", "done"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("first run: no %q in:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = run(t, []string{"PARSEMCP_STORE=" + url}, "migrate")
	if code != 0 {
		t.Fatalf("migrate again: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"change log table " + schema + "._parsemcp_changes already present", "trigger function replaced", "triggers added to 0 classes: none", "triggers already on 3 classes", "already up to date"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("second run: no %q in:\n%s", want, stdout)
		}
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var triggers int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgname = '_parsemcp_change' AND tgrelid IN ('"_User"'::regclass, '"_Role"'::regclass, '"_Session"'::regclass)`).Scan(&triggers); err != nil || triggers != 3 {
		t.Fatalf("%d row triggers: %v", triggers, err)
	}

	stdout, stderr, code = run(t, nil, "migrate", "--store", "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	if code != 0 || !strings.Contains(stdout, "set up (_SCHEMA and the system classes)") {
		t.Fatalf("migrate sqlite: exit %d: %s %s", code, stdout, stderr)
	}
	if _, stderr, code = run(t, []string{"PARSEMCP_STORE="}, "migrate"); code == 0 || !strings.Contains(stderr, "no store") {
		t.Fatalf("migrate without a store: exit %d: %s", code, stderr)
	}
}

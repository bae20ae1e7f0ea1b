package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Installation of the change feed in the database: the change log and its
// state table, the trigger function, and the triggers on the class tables
// (InstallChangeFeed; attachIfInstalled for classes created later).

// FeedInstall reports what InstallChangeFeed did.
type FeedInstall struct {
	Schema       string   // the schema holding the classes and the log
	CreatedTable bool     // the change log was created (false: it existed)
	Function     string   // "created" or "replaced": the trigger function
	Attached     []string // classes whose triggers were added now
	Present      []string // classes that had them already
	NoTable      []string // classes in _SCHEMA without a table (skipped)
}

// InstallChangeFeed installs the change log, its trigger function and the
// triggers on every class table listed in `_SCHEMA`, in one transaction;
// running it again adds only what is missing (the function is replaced by
// the current version). Classes created later through a Store get their
// triggers at once; classes created by other servers (Parse Server) need it
// to run again. It needs the rights to create tables, functions and
// triggers; the function runs as its owner (SECURITY DEFINER), so writers
// need no rights on the log.
func (s *Store) InstallChangeFeed(ctx context.Context) (FeedInstall, error) {
	var out FeedInstall
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return out, fmt.Errorf("postgres: install change feed: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var schema *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return out, err
	}
	if schema == nil {
		return out, errors.New("postgres: install change feed: no current schema (search_path names no existing schema)")
	}
	out.Schema = *schema
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('parsemcp_changes:' || current_schema()))`); err != nil {
		return out, err
	}
	S := pgx.Identifier{out.Schema}.Sanitize()
	log := S + "." + pgx.Identifier{ChangeTable}.Sanitize()
	state := S + "." + pgx.Identifier{changeStateTable}.Sanitize()
	fn := S + "." + pgx.Identifier{changeFunction}.Sanitize()
	var exists, fnExists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regprocedure($2) IS NOT NULL`, log, fn+"()").Scan(&exists, &fnExists); err != nil {
		return out, err
	}
	out.CreatedTable = !exists
	out.Function = "created"
	if fnExists {
		out.Function = "replaced"
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + log + ` (
			seq bigserial PRIMARY KEY,
			op text NOT NULL,
			class text NOT NULL,
			object_id text,
			before jsonb,
			after jsonb,
			at timestamptz NOT NULL DEFAULT now())`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{ChangeTable + "_at"}.Sanitize() + ` ON ` + log + ` (at)`,
		`CREATE TABLE IF NOT EXISTS ` + state + ` (id int PRIMARY KEY CHECK (id = 1), pruned_upto bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO ` + state + ` (id) VALUES (1) ON CONFLICT DO NOTHING`,
		triggerFunctionSQL(fn, log),
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st); err != nil {
			return out, fmt.Errorf("postgres: install change feed: %w", err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT "className", to_regclass(format('%I.%I', $1::text, "className")) IS NOT NULL FROM "_SCHEMA" ORDER BY "className"`, out.Schema)
	if err != nil {
		return out, err
	}
	type class struct {
		name  string
		table bool
	}
	var classes []class
	for rows.Next() {
		var c class
		if err := rows.Scan(&c.name, &c.table); err != nil {
			rows.Close()
			return out, err
		}
		classes = append(classes, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	for _, c := range classes {
		switch {
		case c.name == ChangeTable || c.name == changeStateTable || strings.HasPrefix(c.name, "_Join:"):
			continue
		case !c.table:
			out.NoTable = append(out.NoTable, c.name)
			continue
		}
		added, err := attachTriggers(ctx, tx, out.Schema, c.name)
		if err != nil {
			return out, err
		}
		if added {
			out.Attached = append(out.Attached, c.name)
		} else {
			out.Present = append(out.Present, c.name)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return out, fmt.Errorf("postgres: install change feed: %w", err)
	}
	return out, nil
}

// triggerFunctionSQL is the trigger function: one log row per changed row
// (a statement-level TRUNCATE logs a resync of the class) and a NOTIFY
// carrying only the log row's seq, so no row size meets NOTIFY's limit.
// The logged rows leave out Parse Server's internal columns (a leading
// "_": `_hashed_password`, `_email_verify_token`, `_auth_data_*` …) but
// the ACL's `_rperm`/`_wperm`: no Change carries them, so the log holds no
// copy of them either.
func triggerFunctionSQL(fn, log string) string {
	strip := func(rec string) string {
		return `(SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(to_jsonb(` + rec + `)) e WHERE left(e.key, 1) <> '_' OR e.key IN ('_rperm', '_wperm'))`
	}
	return `CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $parsemcp$
DECLARE
	n bigint;
	o jsonb;
	r jsonb;
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		INSERT INTO ` + log + ` (op, class) VALUES ('resync', TG_TABLE_NAME) RETURNING seq INTO n;
	ELSIF TG_OP = 'INSERT' THEN
		r := ` + strip("NEW") + `;
		INSERT INTO ` + log + ` (op, class, object_id, after) VALUES ('create', TG_TABLE_NAME, r->>'objectId', r) RETURNING seq INTO n;
	ELSIF TG_OP = 'UPDATE' THEN
		o := ` + strip("OLD") + `;
		r := ` + strip("NEW") + `;
		INSERT INTO ` + log + ` (op, class, object_id, before, after) VALUES ('update', TG_TABLE_NAME, r->>'objectId', o, r) RETURNING seq INTO n;
	ELSE
		o := ` + strip("OLD") + `;
		INSERT INTO ` + log + ` (op, class, object_id, before) VALUES ('delete', TG_TABLE_NAME, o->>'objectId', o) RETURNING seq INTO n;
	END IF;
	PERFORM pg_notify('` + ChangeChannel + `', n::text);
	RETURN NULL;
END
$parsemcp$`
}

// attachTriggers adds the change triggers missing on a class table and
// reports whether it added any.
func attachTriggers(ctx context.Context, tx pgx.Tx, schema, class string) (bool, error) {
	S := pgx.Identifier{schema}.Sanitize()
	table := S + "." + pgx.Identifier{class}.Sanitize()
	fn := S + "." + pgx.Identifier{changeFunction}.Sanitize() + "()"
	rows, err := tx.Query(ctx, `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname IN ($2, $3)`, table, rowTrigger, truncateTrigger)
	if err != nil {
		return false, fmt.Errorf("postgres: triggers of %s: %w", class, err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, fmt.Errorf("postgres: triggers of %s: %w", class, err)
	}
	added := false
	if !slices.Contains(have, rowTrigger) {
		if _, err := tx.Exec(ctx, `CREATE TRIGGER `+pgx.Identifier{rowTrigger}.Sanitize()+` AFTER INSERT OR UPDATE OR DELETE ON `+table+` FOR EACH ROW EXECUTE FUNCTION `+fn); err != nil {
			return false, fmt.Errorf("postgres: change trigger on %s: %w", class, err)
		}
		added = true
	}
	if !slices.Contains(have, truncateTrigger) {
		if _, err := tx.Exec(ctx, `CREATE TRIGGER `+pgx.Identifier{truncateTrigger}.Sanitize()+` AFTER TRUNCATE ON `+table+` FOR EACH STATEMENT EXECUTE FUNCTION `+fn); err != nil {
			return false, fmt.Errorf("postgres: truncate trigger on %s: %w", class, err)
		}
		added = true
	}
	return added, nil
}

// attachIfInstalled adds the change triggers to a class table created in
// tx when the change feed is installed (CreateClass).
func attachIfInstalled(ctx context.Context, tx pgx.Tx, class string) error {
	var schema *string
	var installed bool
	if err := tx.QueryRow(ctx, `SELECT current_schema(), to_regprocedure(format('%I.%I()', current_schema(), $1::text)) IS NOT NULL`, changeFunction).Scan(&schema, &installed); err != nil {
		return err
	}
	if !installed || schema == nil {
		return nil
	}
	_, err := attachTriggers(ctx, tx, *schema, class)
	return err
}

package postgres

import (
	"context"
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
)

// Parse Server 9's own columns and indexes of its system classes, beyond
// their schema fields (measured on parse-server 9.10.0 with PostgreSQL:
// docs/COMPATIBILITY.md). CreateClass adds them, so a database parsemcp
// creates is one Parse Server starts on and can log users in to: Parse
// Server indexes `_email_verify_token` and `_perishable_token` at start
// and fails when the columns are missing.

// systemColumns are the extra columns of a system class's table.
func systemColumns(class string) []string {
	if class != parse.ClassUser {
		return nil
	}
	return []string{
		`"_hashed_password" text`,
		`"_email_verify_token_expires_at" timestamp with time zone`,
		`"_email_verify_token" text`,
		`"_account_lockout_expires_at" timestamp with time zone`,
		`"_failed_login_count" double precision`,
		`"_perishable_token" text`,
		`"_perishable_token_expires_at" timestamp with time zone`,
		`"_password_changed_at" timestamp with time zone`,
		`"_password_history" jsonb`,
	}
}

// systemIndexes are the indexes Parse Server creates on a system class's
// table, with its names (IF NOT EXISTS: Parse Server runs the same
// statements at every start).
func systemIndexes(class string) []string {
	switch class {
	case parse.ClassUser:
		return []string{
			`CREATE UNIQUE INDEX IF NOT EXISTS "_User_unique_username" ON "_User" ("username")`,
			`CREATE UNIQUE INDEX IF NOT EXISTS "_User_unique_email" ON "_User" ("email")`,
			`CREATE UNIQUE INDEX IF NOT EXISTS "_User_unique_authData_anonymous_id" ON "_User" ((("authData" -> 'anonymous') ->> 'id')) WHERE (("authData" -> 'anonymous') ->> 'id') IS NOT NULL`,
			`CREATE INDEX IF NOT EXISTS "case_insensitive_username" ON "_User" (lower("username") varchar_pattern_ops)`,
			`CREATE INDEX IF NOT EXISTS "case_insensitive_email" ON "_User" (lower("email") varchar_pattern_ops)`,
			`CREATE INDEX IF NOT EXISTS "_email_verify_token" ON "_User" ("_email_verify_token")`,
			`CREATE INDEX IF NOT EXISTS "_perishable_token" ON "_User" ("_perishable_token")`,
		}
	case parse.ClassRole:
		return []string{`CREATE UNIQUE INDEX IF NOT EXISTS "_Role_unique_name" ON "_Role" ("name")`}
	}
	return nil
}

// SetPasswordHashes gives every _User row without a password the bcrypt
// hash (Parse Server's `_hashed_password`), so those users can log in
// through Parse Server (the demo's documented password). It returns how
// many rows it changed.
func (s *Store) SetPasswordHashes(ctx context.Context, bcryptHash string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE "_User" SET "_hashed_password" = $1 WHERE "_hashed_password" IS NULL`, bcryptHash)
	if err != nil {
		return 0, fmt.Errorf("postgres: set passwords: %w", wrapErr(ctx, err))
	}
	return tag.RowsAffected(), nil
}

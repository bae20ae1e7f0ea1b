package sqlkit

import "github.com/parsemcp/parsemcp/parse"

// Rows is what both database/sql and pgx rows offer.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadSchemaRows decodes `SELECT "className", "schema"` rows of `_SCHEMA`.
func ReadSchemaRows(rows Rows) (map[string]parse.Schema, error) {
	out := map[string]parse.Schema{}
	for rows.Next() {
		var name, raw string
		if err := rows.Scan(&name, &raw); err != nil {
			return nil, err
		}
		sch, err := parse.UnmarshalStoredSchema(name, []byte(raw))
		if err != nil {
			return nil, err
		}
		out[name] = sch
	}
	return out, rows.Err()
}

package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/schemacache"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// Decoding of the change log's rows into Changes, in the REST form Find
// returns.

// decodeLogRow turns a log row into a Change, the rows in the REST form
// Find returns (decoded with the class's current schema). A row that
// cannot be decoded becomes a resync of its class. It runs on the
// listener's goroutine.
func (s *Store) decodeLogRow(ctx context.Context, r logRow) store.Change {
	c := store.Change{ID: "pg:" + strconv.FormatInt(r.seq, 10), Op: store.ChangeOp(r.op), Class: r.class, Time: r.at.UTC()}
	if r.objectID != nil {
		c.ObjectID = *r.objectID
	}
	switch c.Op {
	case store.ChangeCreate, store.ChangeUpdate, store.ChangeDelete:
	default:
		c.Op, c.ObjectID = store.ChangeResync, ""
		return c
	}
	before, err := parseLoggedRow(r.before)
	var after map[string]any
	if err == nil {
		after, err = parseLoggedRow(r.after)
	}
	if err == nil {
		sch := s.feedSchema(ctx, r.class, before, after)
		if c.Before, err = decodeColumns(sch, before); err == nil {
			c.After, err = decodeColumns(sch, after)
		}
	}
	if err != nil {
		s.logger().Warn("postgres change feed: undecodable change; reported as a resync of its class", "seq", r.seq, "class", r.class, "err", err)
		return store.Change{ID: c.ID, Op: store.ChangeResync, Class: r.class, Time: c.Time}
	}
	return c
}

// feedSchema returns the class's schema for decoding rows holding cols. A
// class or a column (other than Parse Server's internal "_" columns) the
// cached schema does not know means another server changed `_SCHEMA`: the
// cache is reloaded, at most once a second. A class that is not in
// `_SCHEMA` (any more) is decoded with its system fields only.
func (s *Store) feedSchema(ctx context.Context, class string, cols ...map[string]any) parse.Schema {
	stale := func(sch parse.Schema, err error) bool {
		if err != nil {
			return true
		}
		for _, m := range cols {
			for k := range m {
				if _, ok := sch.Fields[k]; !ok && !strings.HasPrefix(k, "_") {
					return true
				}
			}
		}
		return false
	}
	sch, err := s.schemas.Shared(ctx, class)
	if stale(sch, err) && time.Since(s.feed.schemaReload) > schemacache.TTL {
		s.feed.schemaReload = time.Now()
		s.schemas.Invalidate()
		sch, err = s.schemas.Shared(ctx, class)
	}
	if err != nil {
		return parse.NewSchema(class)
	}
	return sch
}

// parseLoggedRow parses a row as to_jsonb wrote it (nil: none).
func parseLoggedRow(raw *string) (map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	var cols map[string]any
	if err := json.Unmarshal([]byte(*raw), &cols); err != nil {
		return nil, err
	}
	return cols, nil
}

// decodeColumns decodes a logged row (nil: none) as Find returns it.
func decodeColumns(sch parse.Schema, cols map[string]any) (parse.Object, error) {
	if cols == nil {
		return nil, nil
	}
	return sqlkit.DecodeColumns(codec, sch, cols, jsonColumn)
}

// jsonColumn turns a column as to_jsonb renders it into the value pgx reads
// for that column (what decodeValue expects).
func jsonColumn(f parse.Field, v any) (any, error) {
	switch f.Type {
	case parse.TypeNumber:
		if s, ok := v.(string); ok { // NaN, Infinity
			return strconv.ParseFloat(s, 64)
		}
	case parse.TypeDate:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %T for a timestamp", v)
		}
		return parseTimestamp(s)
	case parse.TypeGeoPoint:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %T for a point", v)
		}
		var p pgtype.Point
		if err := p.Scan(s); err != nil {
			return nil, err
		}
		return p, nil
	case parse.TypePolygon:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %T for a polygon", v)
		}
		var p pgtype.Polygon
		if err := p.Scan(s); err != nil {
			return nil, err
		}
		return p, nil
	}
	return v, nil
}

// parseTimestamp reads a timestamp as to_jsonb renders it (ISO 8601, with
// an offset for timestamptz; none for a timestamp column, taken as UTC).
func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp", s)
}

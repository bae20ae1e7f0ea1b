package sqlite

import (
	"context"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// Scratch returns a new in-memory store holding exactly the classes
// given, empty: a place to run this store's query and pipeline compiler
// over rows fetched from elsewhere (store/parserest runs there the
// aggregations Parse Server cannot restrict to a caller's rows). Unlike
// Create it adds no system class of its own; its change feed is off until
// Watch. Close releases its memory.
func Scratch(ctx context.Context, schemas []parse.Schema) (store.Store, error) {
	s, err := open(":memory:", "rwc", nil)
	if err != nil {
		return nil, err
	}
	if err := s.createSchemaTable(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	for _, sch := range schemas {
		if err := s.CreateClass(ctx, sch); err != nil {
			s.db.Close()
			return nil, err
		}
	}
	return s, nil
}

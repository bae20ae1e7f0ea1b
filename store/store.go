// Package store defines the storage seam: a Store holds Parse classes in
// Parse Server's table layout. Backends live in subpackages (sqlite, and
// later postgres and parserest); store/storetest is the conformance suite
// every backend passes.
//
// A Store is raw and ungoverned: it enforces no ACL of its own beyond the
// Query.ReadACL it is handed. Tools never hold one; they get an agent.Scope.
package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Store is a Parse database.
type Store interface {
	// Schemas returns every class's schema, sorted by class name.
	Schemas(ctx context.Context) ([]parse.Schema, error)
	// Schema returns one class's schema or an error wrapping ErrClassNotFound.
	Schema(ctx context.Context, class string) (parse.Schema, error)
	// CreateClass creates a class (its table, join tables and _SCHEMA row).
	CreateClass(ctx context.Context, s parse.Schema) error

	// Find returns the rows q selects, in REST JSON form.
	Find(ctx context.Context, q *query.Query) ([]parse.Object, error)
	// Count returns how many rows q's constraints select (Limit/Skip ignored).
	Count(ctx context.Context, q *query.Query) (int64, error)
	// Aggregate runs a pipeline parsed (query.ParsePipeline) for class and
	// returns its result rows. readACL, as Query.ReadACL, restricts the
	// rows entering the pipeline and the rows of every $lookup'd class
	// (nil: no restriction).
	Aggregate(ctx context.Context, class string, p *query.Pipeline, readACL []string) ([]map[string]any, error)

	// Create inserts objects atomically: all of them or none. A missing
	// objectId, createdAt or updatedAt is filled in; the objects passed in
	// are updated with what was assigned. Fields must exist in the schema.
	Create(ctx context.Context, class string, objs []parse.Object) error
	// AddRelation links owningID's Relation field to relatedIDs.
	AddRelation(ctx context.Context, class, field, owningID string, relatedIDs []string) error
	// RelatedIDs returns the ids linked by owningID's Relation field.
	RelatedIDs(ctx context.Context, class, field, owningID string) ([]string, error)

	// Close releases the store.
	Close() error
}

// Errors a Store returns (wrapped, with detail).
var (
	ErrClassNotFound = errors.New("class not found")
	ErrClassExists   = errors.New("class already exists")
	ErrInvalid       = errors.New("invalid object")
)

// ClassNotFound returns the error for a missing class.
func ClassNotFound(class string) error { return fmt.Errorf("%w: %s", ErrClassNotFound, class) }

// JoinTable names the table of a Relation field, as Parse Server does.
func JoinTable(field, class string) string { return "_Join:" + field + ":" + class }

// Package store defines the storage seam: a Store holds Parse classes in
// Parse Server's table layout. Backends live in subpackages (sqlite,
// postgres, and later parserest); store/storetest is the conformance suite
// every backend passes. This package holds what every backend needs; the
// SQL the two SQL backends share is in store/internal/sqlkit.
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
	Aggregate(ctx context.Context, class string, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error)

	// Create inserts objects atomically: all of them or none. A missing
	// objectId, createdAt or updatedAt is filled in; the objects passed in
	// are updated with what was assigned. Fields must exist in the schema.
	Create(ctx context.Context, class string, objs []parse.Object) error
	// AddRelation links owningID's Relation field to relatedIDs.
	AddRelation(ctx context.Context, class, field, owningID string, relatedIDs []string) error
	// Update changes one object atomically. set maps fields to their new
	// values in REST JSON form; a {"__op":"Delete"} value unsets the field
	// and an "ACL" key replaces the ACL. updatedAt is set by the store.
	// The row changes only if it matches w (see Write); otherwise the
	// error wraps ErrObjectNotFound, whether the object is missing or
	// merely not writable (the two are indistinguishable on purpose).
	// It returns the object before and after the change.
	Update(ctx context.Context, w Write, set parse.Object) (before, after parse.Object, err error)
	// Delete removes one object matching w, with its rows in the class's
	// relation join tables, atomically, and returns it. A missing or
	// non-matching object is ErrObjectNotFound.
	Delete(ctx context.Context, w Write) (parse.Object, error)
	// DeleteClass drops an empty class: its table, join tables and _SCHEMA
	// row. A class holding objects is refused with ErrClassNotEmpty.
	DeleteClass(ctx context.Context, class string) error
	// RelatedIDs returns the ids linked by owningID's Relation field.
	RelatedIDs(ctx context.Context, class, field, owningID string) ([]string, error)

	// Close releases the store.
	Close() error
}

// Errors a Store returns (wrapped, with detail).
var (
	ErrClassNotFound  = errors.New("class not found")
	ErrClassExists    = errors.New("class already exists")
	ErrInvalid        = errors.New("invalid object")
	ErrObjectNotFound = errors.New("object not found")
	ErrClassNotEmpty  = errors.New("class is not empty")
)

// Write selects the one object an Update or Delete may change.
type Write struct {
	Class string
	ID    string
	// Where is an extra constraint the row must meet (the agent's filters,
	// tenant scope and class-level row rules); nil means none.
	Where query.Expr
	// WriteACL is the writer's ACL restriction on `_wperm`
	// (query.ACLEntries of the entries it holds); query.NoACLFilter for
	// none (the master key). Its zero value changes no row.
	WriteACL query.ACLFilter
}

// ClassNotFound returns the error for a missing class.
func ClassNotFound(class string) error { return fmt.Errorf("%w: %s", ErrClassNotFound, class) }

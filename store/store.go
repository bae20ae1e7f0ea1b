// Package store defines the storage seam: a Store holds Parse classes in
// Parse Server's data model. Backends live in subpackages: sqlite (the
// embedded default) and postgres keep Parse Server's table layout,
// parserest talks to a running Parse Server over its REST API;
// store/storetest is the conformance suite all three pass. This package
// holds the seam every layer sees; what only the backends share is
// internal: store/internal/sqlkit (the SQL of the two SQL backends),
// prepare (the validation of writes), hub (the change feed's
// dispatcher), schemacache and object.
//
// A Store is raw and ungoverned: it enforces no ACL of its own beyond the
// Query.ReadACL it is handed. Tools never hold one; they get an agent.Scope.
package store

import (
	"context"
	"encoding/json"
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
	// ErrNotSetUp: the database has no `_SCHEMA` table, so it is neither
	// a Parse Server database nor one set up by `parsemcp migrate` or
	// `parsemcp demo`. Opening a store never creates it.
	ErrNotSetUp = errors.New("not a Parse database: no _SCHEMA table (create one with `parsemcp migrate --store …` or `parsemcp demo --out …`)")
	// ErrFeedNotInstalled: the store's change feed is not installed, so
	// changes made by other clients are not reported.
	ErrFeedNotInstalled = errors.New("the change feed is not installed in this database (run `parsemcp migrate --store …` with a role that may create tables and triggers)")
	// ErrPermissionDenied: a backend that enforces permissions itself
	// (Parse Server behind store/parserest) refused the operation.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrRateLimited: the backend asked to slow down and kept doing so
	// until the call's time ran out.
	ErrRateLimited = errors.New("rate limited by the backend")
	// ErrUnavailable: the backend could not be reached within the call's
	// time.
	ErrUnavailable = errors.New("backend unavailable")
	// ErrUnsupported: the backend cannot run this operation (a remote
	// backend's API has no form for it).
	ErrUnsupported = errors.New("not supported by this store")
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

// ClassNotEmpty returns the error for dropping a class holding n objects.
func ClassNotEmpty(class string, n int64) error {
	noun := "objects"
	if n == 1 {
		noun = "object"
	}
	return fmt.Errorf("%w: %s holds %d %s; delete them first", ErrClassNotEmpty, class, n, noun)
}

// SharedSchemas is implemented by stores that can hand out a class's
// schema without copying it (the SQL stores' and parserest's schema
// cache). The schema returned is the store's own: the caller reads it and
// never changes it (its Fields, CLP and Indexes are shared). Nor does the
// store: a class that changes gets a new schema with new maps, so the
// identity of a schema's Fields map is its version (the governed scope
// keys the class views it shares on it). The governed scope reads
// schemas this way on every call instead of copying them.
type SharedSchemas interface {
	SharedSchema(ctx context.Context, class string) (parse.Schema, error)
}

// JSONFinder is implemented by stores that write a find's rows as JSON
// text straight from the database's columns, with no object built per row
// (the SQL stores).
type JSONFinder interface {
	// FindJSON runs q as Find does and returns each row as the JSON text
	// of the object Find would return (internal/jsonenc's encoding, keys
	// sorted), without the fields keep refuses (nil keeps every field).
	FindJSON(ctx context.Context, q *query.Query, keep func(field string) bool) ([]json.RawMessage, error)
}

// Pinger is implemented by stores that can tell, with one round trip,
// whether their backend answers now (the schema cache may answer while it
// does not). An error is an *Outage.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Outage is a backend that does not answer: Backend names it for people
// ("PostgreSQL", "SQLite", "Parse Server"; never an address or a
// credential), Err says why (for logs). It is ErrUnavailable.
type Outage struct {
	Backend string
	Err     error
}

func (o *Outage) Error() string   { return o.Backend + " does not answer: " + o.Err.Error() }
func (o *Outage) Unwrap() []error { return []error{ErrUnavailable, o.Err} }

// SessionBinder is implemented by stores that forward a caller's own
// credential to a server enforcing permissions itself (parserest): the
// store returned acts, for queries and writes whose ACL names userID, with
// that user's session token.
type SessionBinder interface {
	WithSession(userID, token string) Store
}

package parserest_test

import (
	"sync"
	"testing"

	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/storetest"
)

// Why subtests of the store suite are skipped against Parse Server. The
// suite's expectations are Parse's semantics on MongoDB and its fixtures
// use identities that are only ACL entry lists; Parse Server on
// PostgreSQL, reached through REST, differs in the ways below (each is
// Parse Server's own behaviour, checked by running it; docs/PARSE_SERVER.md).
const (
	clpRoundTrip = "Parse Server stores a left-out CLP operation as {}: an explicit {} and a left-out operation read back alike (both master key only; we read both as left out)"
	fakeUsers    = "the fixture's identities (user ids with no _User row, roles without a user, entry lists without \"*\") do not exist in Parse Server, which acts only as real users' sessions"
	pgWhere      = "Parse Server on PostgreSQL evaluates these constraints differently or not at all ($nin and $ne leave out rows where the field is unset, dotted paths into Object fields, whole-array equality, $nor, $regex \"\" and Date $ne/$in answer 119 or an internal error)"
	pgOrder      = "Parse Server on PostgreSQL sorts unset values last ascending (the suite expects MongoDB's first)"
	pgAggregate  = "Parse Server on PostgreSQL implements a subset of the pipeline (\"column _id does not exist\", no $group on points, no max(boolean), $lookup fields, …); the suite's master-key aggregations reach Parse Server as written"
	pgGeo        = "$nearSphere and $centerSphere need PostGIS in Parse Server on PostgreSQL (an internal error without it)"
	authData     = "Parse Server validates _User authData against its configured auth providers (none here) and needs a username per user"
	relationIDs  = "Parse Server lists a relation through $relatedTo, which returns existing objects: links to ids with no object are not listed"
	noCAS        = "Parse Server's REST API has no conditional update: the where check and the write are two requests, so concurrent compare-and-set updates can all succeed"
	noBytes      = "Parse Server on PostgreSQL cannot update a Bytes field (119 \"Postgres doesn't support update\")"
	importedTime = "the fixture's createdAt/updatedAt are written after the create (seeded), so the create event carries the times Parse Server gave, and the defaultValue it applied"
	userACL      = "Parse Server 9 gives a _User created without an ACL the ACL {its own id: read and write}, with no public read, so the fixture's public users are private there (its other cases pass: run it with this entry removed)"
	limits       = "at the caps the query is larger than Parse Server accepts (its own depth limits)"
)

var skips = map[string]string{
	"Schema/EveryFieldTypeRoundTrip": clpRoundTrip,
	"Schema/NoAliasing":              clpRoundTrip,
	"Objects/SystemClassRows":        authData,
	"Query/Where":                    pgWhere,
	"Query/Order":                    pgOrder,
	"Query/LimitSkip":                pgOrder,
	"Query/ArrayElementTypes":        pgWhere,
	"ReadACL/ReadACL":                fakeUsers,
	"ReadACL/ACLRoundTrip":           fakeUsers,
	"Relation/AddAndList":            relationIDs,
	"Relation/SystemClass":           authData,
	"Limits/AtTheCaps":               limits,
	"Aggregate/Pipelines":            pgAggregate,
	"Aggregate/Errors":               authData,
	"Aggregate/FieldTypes":           pgAggregate,
	"Aggregate/JSONValues":           pgAggregate,
	"Aggregate/Governance":           authData,
	"Aggregate/StageErrors":          authData,
	"Aggregate/StageGovernance":      userACL,
	"CrossClass/Operators":           pgWhere,
	"CrossClass/NearSphereOrder":     pgGeo,
	"CrossClass/SubqueryReadACL":     fakeUsers,
	"Match/Differential":             pgWhere,
	"Match/NotMatchable":             pgWhere,
	"Write/CompareAndSet":            noCAS,
	"Write/UpdateEveryType":          noBytes,
	"Write/UpdateACL":                fakeUsers,
	"Write/WhereConstraint":          fakeUsers,
	"Write/WriteACLUpdate":           fakeUsers,
	"Write/WriteACLDelete":           fakeUsers,
	"Write/Delete":                   fakeUsers,
	"Write/DeleteClass":              relationIDs,
	"Write/DeleteJoinRows":           authData,
	"Feed/CreateUpdateDelete":        importedTime,
	"Feed/NoEventForFailedWrite":     fakeUsers,
}

// TestConformance runs the store suite against a real Parse Server 9 on
// PostgreSQL; each subtest starts from an emptied server (reset).
func TestConformance(t *testing.T) {
	srv := startServer(t)
	db, dbMu := dbConn(t, srv), new(sync.Mutex)
	storetest.RunSkipping(t, func(t *testing.T) store.Store {
		reset(t, srv)
		return &seeded{Store: openStore(t, srv), db: db, dbMu: dbMu}
	}, skips)
}

package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var aggregateTests = []subtest{
	{"Pipelines", testAggregatePipelines},
	{"Errors", testAggregateErrors},
	{"FieldTypes", testAggregateFieldTypes},
	{"JSONValues", testAggregateJSONValues},
	{"Governance", testAggregateGovernance},
	{"Stages", testAggregateStages},
	{"StageErrors", testAggregateStageErrors},
	{"StageGovernance", testAggregateStageGovernance},
}

// The aggregation fixture.
//
// _User (createdAt 2023-06-0N for uN):
//
//	u1 ada   u2 bob   u3 cy (ACL: u3 only)
//
// Project (createdAt 2023-07-0N for pN):
//
//	p1 Apollo    budget 100  lead u1  start 2024-01-01  active true
//	p2 Borealis  budget 250  lead u2                    active false
//	p3 Cobalt    budget 50                              (ACL: role:Admin only)
//
// Task:
//
//	id  title    status  prio pts done  due               tags            meta                 owner project createdAt                ACL
//	t1  alpha    open    1    3   false 2024-03-01T10:00  [ui, bug]       {area:web, est:2}    u1    p1      2024-01-15T09:30:00.000Z -
//	t2  bravo    open    2    5   false 2024-03-05T00:00  [bug]           {area:api, est:5}    u2    p1      2024-01-20T14:00:00.000Z -
//	t3  charlie  closed  1    8   true  2024-02-10T12:00  [ui]            {area:web}           u1    p2      2024-02-03T08:15:00.000Z -
//	t4  delta    closed  3    2   true  —                 []              {area:ops, est:1}    u3    p2      2024-02-29T23:59:59.999Z -
//	t5  echo     review  2    —   false 2024-04-01T00:00  [api, bug, ui]  —                    u2    p3      2024-03-10T00:00:00.000Z -
//	t6  foxtrot  —       1    1   —     —                 —               {area:web, est:3}    —     p1      2023-12-31T22:00:00.000Z -
//	t7  golf     open    3    13  false 2024-05-20T09:00  [infra]         {area:ops}           u1    —       2024-03-10T18:45:00.000Z u1 only
//	t8  hotel    closed  2    5   true  2024-01-31T00:00  [bug]           {area:api, est:8}    u3    p3      2024-01-15T11:00:00.000Z role:Admin only
//
// "—" is a field left out; updatedAt equals createdAt.
const aggTaskSchema = `{
  "className": "Task",
  "fields": {
    "title":    {"type": "String"},
    "status":   {"type": "String"},
    "priority": {"type": "Number"},
    "points":   {"type": "Number"},
    "done":     {"type": "Boolean"},
    "due":      {"type": "Date"},
    "tags":     {"type": "Array"},
    "meta":     {"type": "Object"},
    "owner":    {"type": "Pointer", "targetClass": "_User"},
    "project":  {"type": "Pointer", "targetClass": "Project"}
  },
  "classLevelPermissions": {}
}`

const aggProjectSchema = `{
  "className": "Project",
  "fields": {
    "name":   {"type": "String"},
    "budget": {"type": "Number"},
    "lead":   {"type": "Pointer", "targetClass": "_User"},
    "start":  {"type": "Date"},
    "active": {"type": "Boolean"}
  },
  "classLevelPermissions": {}
}`

const aggUsers = `[
  {"objectId": "u1", "createdAt": "2023-06-01T00:00:00.000Z", "username": "ada"},
  {"objectId": "u2", "createdAt": "2023-06-02T00:00:00.000Z", "username": "bob"},
  {"objectId": "u3", "createdAt": "2023-06-03T00:00:00.000Z", "username": "cy", "ACL": {"u3": {"read": true, "write": true}}}
]`

const aggProjects = `[
  {"objectId": "p1", "createdAt": "2023-07-01T00:00:00.000Z", "name": "Apollo", "budget": 100,
   "lead": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
   "start": {"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}, "active": true},
  {"objectId": "p2", "createdAt": "2023-07-02T00:00:00.000Z", "name": "Borealis", "budget": 250,
   "lead": {"__type": "Pointer", "className": "_User", "objectId": "u2"}, "active": false},
  {"objectId": "p3", "createdAt": "2023-07-03T00:00:00.000Z", "name": "Cobalt", "budget": 50,
   "ACL": {"role:Admin": {"read": true}}}
]`

const aggTasks = `[
  {"objectId": "t1", "createdAt": "2024-01-15T09:30:00.000Z", "title": "alpha", "status": "open", "priority": 1, "points": 3, "done": false,
   "due": {"__type": "Date", "iso": "2024-03-01T10:00:00.000Z"}, "tags": ["ui", "bug"], "meta": {"area": "web", "est": 2},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
   "project": {"__type": "Pointer", "className": "Project", "objectId": "p1"}},
  {"objectId": "t2", "createdAt": "2024-01-20T14:00:00.000Z", "title": "bravo", "status": "open", "priority": 2, "points": 5, "done": false,
   "due": {"__type": "Date", "iso": "2024-03-05T00:00:00.000Z"}, "tags": ["bug"], "meta": {"area": "api", "est": 5},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"},
   "project": {"__type": "Pointer", "className": "Project", "objectId": "p1"}},
  {"objectId": "t3", "createdAt": "2024-02-03T08:15:00.000Z", "title": "charlie", "status": "closed", "priority": 1, "points": 8, "done": true,
   "due": {"__type": "Date", "iso": "2024-02-10T12:00:00.000Z"}, "tags": ["ui"], "meta": {"area": "web"},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
   "project": {"__type": "Pointer", "className": "Project", "objectId": "p2"}},
  {"objectId": "t4", "createdAt": "2024-02-29T23:59:59.999Z", "title": "delta", "status": "closed", "priority": 3, "points": 2, "done": true,
   "tags": [], "meta": {"area": "ops", "est": 1},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u3"},
   "project": {"__type": "Pointer", "className": "Project", "objectId": "p2"}},
  {"objectId": "t5", "createdAt": "2024-03-10T00:00:00.000Z", "title": "echo", "status": "review", "priority": 2, "done": false,
   "due": {"__type": "Date", "iso": "2024-04-01T00:00:00.000Z"}, "tags": ["api", "bug", "ui"],
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"},
   "project": {"__type": "Pointer", "className": "Project", "objectId": "p3"}},
  {"objectId": "t6", "createdAt": "2023-12-31T22:00:00.000Z", "title": "foxtrot", "priority": 1, "points": 1,
   "meta": {"area": "web", "est": 3},
   "project": {"__type": "Pointer", "className": "Project", "objectId": "p1"}},
  {"objectId": "t7", "createdAt": "2024-03-10T18:45:00.000Z", "title": "golf", "status": "open", "priority": 3, "points": 13, "done": false,
   "due": {"__type": "Date", "iso": "2024-05-20T09:00:00.000Z"}, "tags": ["infra"], "meta": {"area": "ops"},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
   "ACL": {"u1": {"read": true}}},
  {"objectId": "t8", "createdAt": "2024-01-15T11:00:00.000Z", "title": "hotel", "status": "closed", "priority": 2, "points": 5, "done": true,
   "due": {"__type": "Date", "iso": "2024-01-31T00:00:00.000Z"}, "tags": ["bug"], "meta": {"area": "api", "est": 8},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u3"},
   "project": {"__type": "Pointer", "className": "Project", "objectId": "p3"},
   "ACL": {"role:Admin": {"read": true}}}
]`

func loadAggFixture(t *testing.T, s store.Store) {
	t.Helper()
	mustCreateClass(t, s, classFromJSON(t, aggProjectSchema))
	mustCreateClass(t, s, classFromJSON(t, aggTaskSchema))
	mustCreate(t, s, parse.ClassUser, decodeObjects(t, aggUsers))
	mustCreate(t, s, "Project", decodeObjects(t, aggProjects))
	mustCreate(t, s, "Task", decodeObjects(t, aggTasks))
}

// The objects a $lookup returns look like the rows a find returns.
const (
	aggU1 = `{"objectId": "u1", "createdAt": "2023-06-01T00:00:00.000Z", "updatedAt": "2023-06-01T00:00:00.000Z", "username": "ada"}`
	aggU3 = `{"objectId": "u3", "createdAt": "2023-06-03T00:00:00.000Z", "updatedAt": "2023-06-03T00:00:00.000Z", "username": "cy"}`
	aggP1 = `{"objectId": "p1", "createdAt": "2023-07-01T00:00:00.000Z", "updatedAt": "2023-07-01T00:00:00.000Z", "name": "Apollo", "budget": 100,
	  "lead": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
	  "start": {"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}, "active": true}`
)

func aggDate(iso string) string { return `{"__type": "Date", "iso": "` + iso + `"}` }

func aggPtr(class, id string) string {
	return `{"__type": "Pointer", "className": "` + class + `", "objectId": "` + id + `"}`
}

var (
	aclPublic      = []string{"*"}
	aclPublicU1    = []string{"*", "u1"}
	aclPublicAdmin = []string{"*", "role:Admin"}
)

// aggregateCases are pipelines over the fixture and the rows they return,
// worked out by hand with MongoDB's semantics and Parse Server's renaming
// (_id → objectId, null results omitted, pointers in $group as bare ids).
// Rows leave a stage in the order it defines: the class rows by objectId,
// $group's groups by ascending key (nulls first), $sort's rows by its keys
// (ties keep their order), $unwind's rows by array position.
var aggregateCases = []struct {
	name     string
	class    string // "" = Task
	acl      []string
	pipeline string
	want     string
}{
	{"match+project", "", nil,
		`[{"$match": {"status": "open"}}, {"$project": {"title": 1}}]`,
		`[{"objectId": "t1", "title": "alpha"}, {"objectId": "t2", "title": "bravo"}, {"objectId": "t7", "title": "golf"}]`},
	{"empty pipeline with ACL", "", aclPublic,
		`[{"$project": {"_id": 1}}]`,
		`[{"objectId": "t1"}, {"objectId": "t2"}, {"objectId": "t3"}, {"objectId": "t4"}, {"objectId": "t5"}, {"objectId": "t6"}]`},
	{"whole rows", "", nil,
		`[{"$match": {"objectId": "t2"}}]`,
		`[{"objectId": "t2", "createdAt": "2024-01-20T14:00:00.000Z", "updatedAt": "2024-01-20T14:00:00.000Z", "title": "bravo",
		   "status": "open", "priority": 2, "points": 5, "done": false, "due": ` + aggDate("2024-03-05T00:00:00.000Z") + `,
		   "tags": ["bug"], "meta": {"area": "api", "est": 5}, "owner": ` + aggPtr("_User", "u2") + `, "project": ` + aggPtr("Project", "p1") + `}]`},
	{"match _id", "", nil,
		`[{"$match": {"_id": "t3"}}, {"$project": {"title": 1}}]`,
		`[{"objectId": "t3", "title": "charlie"}]`},
	{"match a pointer by objectId", "", nil,
		`[{"$match": {"owner": "u1"}}, {"$project": {"_id": 1}}]`,
		`[{"objectId": "t1"}, {"objectId": "t3"}, {"objectId": "t7"}]`},
	{"group count by status", "", nil,
		`[{"$group": {"_id": "$status", "n": {"$sum": 1}}}]`,
		`[{"objectId": null, "n": 1}, {"objectId": "closed", "n": 3}, {"objectId": "open", "n": 3}, {"objectId": "review", "n": 1}]`},
	{"group all", "", nil,
		`[{"$group": {"_id": null, "total": {"$sum": "$points"}, "lo": {"$min": "$points"}, "hi": {"$max": "$points"}, "n": {"$count": {}}}}]`,
		`[{"objectId": null, "total": 37, "lo": 1, "hi": 13, "n": 8}]`},
	{"group by constant", "", nil,
		`[{"$group": {"_id": "all", "n": {"$sum": 1}}}]`,
		`[{"objectId": "all", "n": 8}]`},
	{"avg, null average omitted", "", nil,
		`[{"$group": {"_id": "$status", "avg": {"$avg": "$points"}, "pts": {"$sum": "$points"}}}]`,
		`[{"objectId": null, "avg": 1, "pts": 1}, {"objectId": "closed", "avg": 5, "pts": 15},
		  {"objectId": "open", "avg": 7, "pts": 21}, {"objectId": "review", "pts": 0}]`},
	{"readACL hides rows from $group", "", aclPublic,
		`[{"$group": {"_id": "$status", "n": {"$sum": 1}}}]`,
		`[{"objectId": null, "n": 1}, {"objectId": "closed", "n": 2}, {"objectId": "open", "n": 2}, {"objectId": "review", "n": 1}]`},
	{"readACL user sees own row", "", aclPublicU1,
		`[{"$group": {"_id": "$status", "n": {"$sum": 1}}}]`,
		`[{"objectId": null, "n": 1}, {"objectId": "closed", "n": 2}, {"objectId": "open", "n": 3}, {"objectId": "review", "n": 1}]`},
	{"readACL empty entries", "", []string{},
		`[{"$count": "n"}]`,
		`[{"n": 6}]`},
	{"group by pointer", "", nil,
		`[{"$group": {"_id": "$owner", "n": {"$sum": 1}}}]`,
		`[{"objectId": null, "n": 1}, {"objectId": "u1", "n": 3}, {"objectId": "u2", "n": 2}, {"objectId": "u3", "n": 2}]`},
	{"composite key", "", nil,
		`[{"$group": {"_id": {"s": "$status", "d": "$done"}, "n": {"$sum": 1}}}, {"$sort": {"_id.s": 1, "_id.d": 1}}]`,
		`[{"objectId": {}, "n": 1}, {"objectId": {"s": "closed", "d": true}, "n": 3},
		  {"objectId": {"s": "open", "d": false}, "n": 3}, {"objectId": {"s": "review", "d": false}, "n": 1}]`},
	{"group by year and month", "", nil,
		`[{"$group": {"_id": {"y": {"$year": "$createdAt"}, "m": {"$month": "$createdAt"}}, "n": {"$sum": 1}}}]`,
		`[{"objectId": {"y": 2023, "m": 12}, "n": 1}, {"objectId": {"y": 2024, "m": 1}, "n": 3},
		  {"objectId": {"y": 2024, "m": 2}, "n": 2}, {"objectId": {"y": 2024, "m": 3}, "n": 2}]`},
	{"group by day of week", "", nil,
		`[{"$group": {"_id": {"$dayOfWeek": "$createdAt"}, "n": {"$sum": 1}}}]`,
		`[{"objectId": 1, "n": 3}, {"objectId": 2, "n": 2}, {"objectId": 5, "n": 1}, {"objectId": 7, "n": 2}]`},
	{"date parts", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}},
		  {"$project": {"dom": {"$dayOfMonth": "$createdAt"}, "dow": {"$dayOfWeek": "$createdAt"}, "h": {"$hour": "$createdAt"},
		    "mi": {"$minute": "$createdAt"}, "s": {"$second": "$createdAt"}, "ms": {"$millisecond": {"date": "$createdAt", "timezone": "UTC"}},
		    "doy": {"$dayOfYear": "$createdAt"}, "w": {"$week": "$createdAt"}, "iw": {"$isoWeek": "$createdAt"},
		    "iy": {"$isoWeekYear": "$createdAt"}, "idow": {"$isoDayOfWeek": "$createdAt"}}}]`,
		`[{"objectId": "t1", "dom": 15, "dow": 2, "h": 9, "mi": 30, "s": 0, "ms": 0, "doy": 15, "w": 2, "iw": 3, "iy": 2024, "idow": 1},
		  {"objectId": "t4", "dom": 29, "dow": 5, "h": 23, "mi": 59, "s": 59, "ms": 999, "doy": 60, "w": 8, "iw": 9, "iy": 2024, "idow": 4},
		  {"objectId": "t6", "dom": 31, "dow": 1, "h": 22, "mi": 0, "s": 0, "ms": 0, "doy": 365, "w": 53, "iw": 52, "iy": 2023, "idow": 7}]`},
	{"date parts in time zones", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}},
		  {"$project": {"d": {"$dayOfMonth": {"date": "$createdAt", "timezone": "Asia/Tokyo"}}, "h": {"$hour": {"date": "$createdAt", "timezone": "Asia/Tokyo"}},
		    "y": {"$year": {"date": "$createdAt", "timezone": "+05:30"}}, "ny": {"$hour": {"date": "$createdAt", "timezone": "America/New_York"}},
		    "neg": {"$hour": {"date": "$createdAt", "timezone": "-03:00"}}}}]`,
		`[{"objectId": "t1", "d": 15, "h": 18, "y": 2024, "ny": 4, "neg": 6},
		  {"objectId": "t4", "d": 1, "h": 8, "y": 2024, "ny": 18, "neg": 20},
		  {"objectId": "t6", "d": 1, "h": 7, "y": 2024, "ny": 17, "neg": 19}]`},
	{"group by minute and second in a time zone (group_by_date)", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}},
		  {"$group": {"_id": {"h": {"$hour": {"date": "$createdAt", "timezone": "+05:30"}}, "i": {"$minute": {"date": "$createdAt", "timezone": "+05:30"}},
		    "s": {"$second": {"date": "$createdAt", "timezone": "+05:30"}}}, "n": {"$sum": 1}}},
		  {"$sort": {"_id.h": 1}}]`,
		`[{"objectId": {"h": 3, "i": 30, "s": 0}, "n": 1}, {"objectId": {"h": 5, "i": 29, "s": 59}, "n": 1}, {"objectId": {"h": 15, "i": 0, "s": 0}, "n": 1}]`},
	{"sort desc + limit, ties keep order", "", nil,
		`[{"$sort": {"points": -1}}, {"$limit": 3}, {"$project": {"_id": 0, "title": 1, "points": 1}}]`,
		`[{"title": "golf", "points": 13}, {"title": "charlie", "points": 8}, {"title": "bravo", "points": 5}]`},
	{"sort asc (nulls first) + skip", "", nil,
		`[{"$sort": {"points": 1}}, {"$skip": 5}, {"$project": {"title": 1}}]`,
		`[{"objectId": "t8", "title": "hotel"}, {"objectId": "t3", "title": "charlie"}, {"objectId": "t7", "title": "golf"}]`},
	{"skip then limit", "", nil,
		`[{"$sort": {"createdAt": -1}}, {"$skip": 1}, {"$limit": 2}, {"$project": {"_id": 1}}]`,
		`[{"objectId": "t5"}, {"objectId": "t4"}]`},
	{"limit beyond the rows", "", aclPublic,
		`[{"$match": {"done": true}}, {"$limit": 100}, {"$project": {"_id": 1}}]`,
		`[{"objectId": "t3"}, {"objectId": "t4"}]`},
	{"count", "", nil,
		`[{"$match": {"done": true}}, {"$count": "closedCount"}]`,
		`[{"closedCount": 3}]`},
	{"count of nothing is no row", "", nil,
		`[{"$match": {"status": "nope"}}, {"$count": "n"}]`,
		`[]`},
	{"group of nothing is no row", "", nil,
		`[{"$match": {"status": "nope"}}, {"$group": {"_id": null, "n": {"$sum": 1}}}]`,
		`[]`},
	{"unwind + group + sort", "", nil,
		`[{"$unwind": "$tags"}, {"$group": {"_id": "$tags", "n": {"$sum": 1}}}, {"$sort": {"n": -1, "_id": 1}}]`,
		`[{"objectId": "bug", "n": 4}, {"objectId": "ui", "n": 3}, {"objectId": "api", "n": 1}, {"objectId": "infra", "n": 1}]`},
	{"unwind preserve + index", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}},
		  {"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": true, "includeArrayIndex": "i"}}, {"$project": {"tags": 1, "i": 1}}]`,
		`[{"objectId": "t1", "tags": "ui", "i": 0}, {"objectId": "t1", "tags": "bug", "i": 1}, {"objectId": "t4"}, {"objectId": "t6"}]`},
	{"unwind drops empty and missing arrays", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}}, {"$unwind": "$tags"}, {"$count": "n"}]`,
		`[{"n": 2}]`},
	{"match an unwound element", "", nil,
		`[{"$unwind": "$tags"}, {"$match": {"tags": {"$in": ["api", "infra"]}}}, {"$project": {"tags": 1}}]`,
		`[{"objectId": "t5", "tags": "api"}, {"objectId": "t7", "tags": "infra"}]`},
	{"lookup a pointer", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}},
		  {"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "who"}}, {"$project": {"title": 1, "who": 1}}]`,
		`[{"objectId": "t1", "title": "alpha", "who": [` + aggU1 + `]}, {"objectId": "t4", "title": "delta", "who": [` + aggU3 + `]},
		  {"objectId": "t6", "title": "foxtrot", "who": []}]`},
	{"lookup by objectId", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}},
		  {"$lookup": {"from": "_User", "localField": "owner", "foreignField": "objectId", "as": "who"}}, {"$project": {"title": 1, "who": 1}}]`,
		`[{"objectId": "t1", "title": "alpha", "who": [` + aggU1 + `]}, {"objectId": "t4", "title": "delta", "who": [` + aggU3 + `]},
		  {"objectId": "t6", "title": "foxtrot", "who": []}]`},
	{"readACL hides looked-up rows", "", aclPublic,
		`[{"$match": {"objectId": {"$in": ["t1", "t4", "t6"]}}},
		  {"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "who"}}, {"$project": {"title": 1, "who": 1}}]`,
		`[{"objectId": "t1", "title": "alpha", "who": [` + aggU1 + `]}, {"objectId": "t4", "title": "delta", "who": []},
		  {"objectId": "t6", "title": "foxtrot", "who": []}]`},
	{"lookup object with every kind of field", "", nil,
		`[{"$match": {"objectId": "t1"}}, {"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "proj"}},
		  {"$project": {"_id": 0, "proj": 1}}]`,
		`[{"proj": [` + aggP1 + `]}]`},
	{"lookup + unwind + group by looked-up field", "", nil,
		`[{"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "proj"}}, {"$unwind": "$proj"},
		  {"$group": {"_id": "$proj.name", "pts": {"$sum": "$points"}, "n": {"$sum": 1}}}]`,
		`[{"objectId": "Apollo", "pts": 9, "n": 3}, {"objectId": "Borealis", "pts": 10, "n": 2}, {"objectId": "Cobalt", "pts": 5, "n": 2}]`},
	{"readACL in the pipeline and in $lookup", "", aclPublic,
		`[{"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "proj"}}, {"$unwind": "$proj"},
		  {"$group": {"_id": "$proj.name", "pts": {"$sum": "$points"}, "n": {"$sum": 1}}}]`,
		`[{"objectId": "Apollo", "pts": 9, "n": 3}, {"objectId": "Borealis", "pts": 10, "n": 2}]`},
	{"readACL role sees role rows in both", "", aclPublicAdmin,
		`[{"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "proj"}}, {"$unwind": "$proj"},
		  {"$group": {"_id": "$proj.name", "pts": {"$sum": "$points"}, "n": {"$sum": 1}}}]`,
		`[{"objectId": "Apollo", "pts": 9, "n": 3}, {"objectId": "Borealis", "pts": 10, "n": 2}, {"objectId": "Cobalt", "pts": 5, "n": 2}]`},
	{"reverse lookup", "Project", nil,
		`[{"$lookup": {"from": "Task", "localField": "_id", "foreignField": "project", "as": "tasks"}}, {"$unwind": "$tasks"},
		  {"$group": {"_id": "$name", "titles": {"$push": "$tasks.title"}}}]`,
		`[{"objectId": "Apollo", "titles": ["alpha", "bravo", "foxtrot"]}, {"objectId": "Borealis", "titles": ["charlie", "delta"]},
		  {"objectId": "Cobalt", "titles": ["echo", "hotel"]}]`},
	{"reverse lookup under readACL", "Project", aclPublicAdmin,
		`[{"$lookup": {"from": "Task", "localField": "_id", "foreignField": "project", "as": "tasks"}}, {"$unwind": "$tasks"},
		  {"$group": {"_id": "$name", "titles": {"$push": "$tasks.title"}}}]`,
		`[{"objectId": "Apollo", "titles": ["alpha", "bravo", "foxtrot"]}, {"objectId": "Borealis", "titles": ["charlie", "delta"]},
		  {"objectId": "Cobalt", "titles": ["echo", "hotel"]}]`},
	{"reverse lookup, public", "Project", aclPublic,
		`[{"$lookup": {"from": "Task", "localField": "_id", "foreignField": "project", "as": "tasks"}}, {"$unwind": "$tasks"},
		  {"$group": {"_id": "$name", "titles": {"$push": "$tasks.title"}}}]`,
		`[{"objectId": "Apollo", "titles": ["alpha", "bravo", "foxtrot"]}, {"objectId": "Borealis", "titles": ["charlie", "delta"]}]`},
	{"chained lookups", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t3"]}}},
		  {"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "proj"}}, {"$unwind": "$proj"},
		  {"$lookup": {"from": "_User", "localField": "proj.lead", "foreignField": "_id", "as": "lead"}}, {"$unwind": "$lead"},
		  {"$project": {"title": 1, "leadName": "$lead.username"}}]`,
		`[{"objectId": "t1", "title": "alpha", "leadName": "ada"}, {"objectId": "t3", "title": "charlie", "leadName": "bob"}]`},
	{"match a looked-up field", "", nil,
		`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$unwind": "$u"},
		  {"$match": {"u.username": "bob"}}, {"$project": {"title": 1}}]`,
		`[{"objectId": "t2", "title": "bravo"}, {"objectId": "t5", "title": "echo"}]`},
	{"sort by a looked-up field", "", nil,
		`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$unwind": "$u"},
		  {"$sort": {"u.username": -1}}, {"$limit": 3}, {"$project": {"title": 1}}]`,
		`[{"objectId": "t4", "title": "delta"}, {"objectId": "t8", "title": "hotel"}, {"objectId": "t2", "title": "bravo"}]`},
	{"push and addToSet", "", nil,
		`[{"$match": {"status": {"$exists": true}}}, {"$sort": {"priority": 1}},
		  {"$group": {"_id": "$status", "titles": {"$push": "$title"}, "prios": {"$addToSet": "$priority"}}}]`,
		`[{"objectId": "closed", "titles": ["charlie", "hotel", "delta"], "prios": [1, 2, 3]},
		  {"objectId": "open", "titles": ["alpha", "bravo", "golf"], "prios": [1, 2, 3]},
		  {"objectId": "review", "titles": ["echo"], "prios": [2]}]`},
	{"addToSet of pointers is bare ids", "", nil,
		`[{"$unwind": "$tags"}, {"$group": {"_id": "$tags", "owners": {"$addToSet": "$owner"}}}, {"$sort": {"_id": 1}}]`,
		`[{"objectId": "api", "owners": ["u2"]}, {"objectId": "bug", "owners": ["u1", "u2", "u3"]},
		  {"objectId": "infra", "owners": ["u1"]}, {"objectId": "ui", "owners": ["u1", "u2"]}]`},
	{"push skips missing values", "", nil,
		`[{"$group": {"_id": "$done", "dues": {"$push": "$due"}}}]`,
		`[{"objectId": null, "dues": []},
		  {"objectId": false, "dues": [` + aggDate("2024-03-01T10:00:00.000Z") + `, ` + aggDate("2024-03-05T00:00:00.000Z") + `, ` +
			aggDate("2024-04-01T00:00:00.000Z") + `, ` + aggDate("2024-05-20T09:00:00.000Z") + `]},
		  {"objectId": true, "dues": [` + aggDate("2024-02-10T12:00:00.000Z") + `, ` + aggDate("2024-01-31T00:00:00.000Z") + `]}]`},
	{"unwind a pushed date array", "", nil,
		`[{"$match": {"status": "open"}}, {"$group": {"_id": null, "dues": {"$push": "$due"}}}, {"$unwind": "$dues"},
		  {"$project": {"_id": 0, "m": {"$month": "$dues"}, "d": "$dues"}}]`,
		`[{"m": 3, "d": ` + aggDate("2024-03-01T10:00:00.000Z") + `}, {"m": 3, "d": ` + aggDate("2024-03-05T00:00:00.000Z") + `},
		  {"m": 5, "d": ` + aggDate("2024-05-20T09:00:00.000Z") + `}]`},
	{"first, last, max of dates", "", nil,
		`[{"$sort": {"createdAt": 1}},
		  {"$group": {"_id": "$owner", "first": {"$first": "$title"}, "last": {"$last": "$title"}, "firstAt": {"$first": "$createdAt"}, "lastDue": {"$max": "$due"}}}]`,
		`[{"objectId": null, "first": "foxtrot", "last": "foxtrot", "firstAt": ` + aggDate("2023-12-31T22:00:00.000Z") + `},
		  {"objectId": "u1", "first": "alpha", "last": "golf", "firstAt": ` + aggDate("2024-01-15T09:30:00.000Z") + `, "lastDue": ` + aggDate("2024-05-20T09:00:00.000Z") + `},
		  {"objectId": "u2", "first": "bravo", "last": "echo", "firstAt": ` + aggDate("2024-01-20T14:00:00.000Z") + `, "lastDue": ` + aggDate("2024-04-01T00:00:00.000Z") + `},
		  {"objectId": "u3", "first": "hotel", "last": "delta", "firstAt": ` + aggDate("2024-01-15T11:00:00.000Z") + `, "lastDue": ` + aggDate("2024-01-31T00:00:00.000Z") + `}]`},
	{"first and last of JSON values", "", nil,
		`[{"$match": {"status": "open"}}, {"$group": {"_id": null, "m": {"$first": "$meta"}, "t": {"$last": "$tags"}, "a": {"$first": "$meta.area"}}}]`,
		`[{"objectId": null, "m": {"area": "web", "est": 2}, "t": ["infra"], "a": "web"}]`},
	{"constant sum, min/max of strings and booleans", "", nil,
		`[{"$group": {"_id": "$done", "dbl": {"$sum": 2}, "lo": {"$min": "$title"}, "hi": {"$max": "$title"}, "any": {"$max": "$done"}, "all": {"$min": "$done"}}}]`,
		`[{"objectId": null, "dbl": 2, "lo": "foxtrot", "hi": "foxtrot"},
		  {"objectId": false, "dbl": 8, "lo": "alpha", "hi": "golf", "any": false, "all": false},
		  {"objectId": true, "dbl": 6, "lo": "charlie", "hi": "hotel", "any": true, "all": true}]`},
	{"match computed fields", "", nil,
		`[{"$group": {"_id": "$owner", "pts": {"$sum": "$points"}}}, {"$match": {"pts": {"$gte": 10}}}]`,
		`[{"objectId": "u1", "pts": 24}]`},
	{"match the group key by _id", "", nil,
		`[{"$group": {"_id": "$owner", "n": {"$sum": 1}}}, {"$match": {"_id": {"$in": ["u2", "u3"]}}}]`,
		`[{"objectId": "u2", "n": 2}, {"objectId": "u3", "n": 2}]`},
	{"match a composite key component", "", nil,
		`[{"$group": {"_id": {"y": {"$year": "$createdAt"}, "m": {"$month": "$createdAt"}}, "n": {"$sum": 1}}},
		  {"$match": {"_id.y": 2024, "n": {"$gt": 1}}}, {"$sort": {"n": -1}}]`,
		`[{"objectId": {"y": 2024, "m": 1}, "n": 3}, {"objectId": {"y": 2024, "m": 2}, "n": 2}, {"objectId": {"y": 2024, "m": 3}, "n": 2}]`},
	{"sort by a whole composite key", "", nil,
		`[{"$group": {"_id": {"p": "$priority", "s": "$status"}, "n": {"$sum": 1}}}, {"$sort": {"_id": -1}}, {"$project": {"_id": 1}}]`,
		`[{"objectId": {"p": 3, "s": "open"}}, {"objectId": {"p": 3, "s": "closed"}}, {"objectId": {"p": 2, "s": "review"}},
		  {"objectId": {"p": 2, "s": "open"}}, {"objectId": {"p": 2, "s": "closed"}}, {"objectId": {"p": 1, "s": "open"}},
		  {"objectId": {"p": 1, "s": "closed"}}, {"objectId": {"p": 1}}]`},
	{"addFields constants and references", "", nil,
		`[{"$match": {"objectId": "t2"}},
		  {"$addFields": {"kind": "task", "weight": 2, "flag": true, "ownerRef": "$owner", "yr": {"$year": "$due"}, "area": "$meta.area",
		    "since": {"$literal": {"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}}, "tags": {"$literal": "$notAField"}}},
		  {"$project": {"kind": 1, "weight": 1, "flag": 1, "ownerRef": 1, "yr": 1, "area": 1, "since": 1, "tags": 1}}]`,
		`[{"objectId": "t2", "kind": "task", "weight": 2, "flag": true, "ownerRef": ` + aggPtr("_User", "u2") + `, "yr": 2024, "area": "api",
		   "since": ` + aggDate("2024-01-01T00:00:00.000Z") + `, "tags": "$notAField"}]`},
	{"project renames", "", nil,
		`[{"$match": {"objectId": "t3"}}, {"$project": {"_id": 0, "name": "$title", "who": "$owner", "est": "$meta.est", "created": "$createdAt"}}]`,
		`[{"name": "charlie", "who": ` + aggPtr("_User", "u1") + `, "created": ` + aggDate("2024-02-03T08:15:00.000Z") + `}]`},
	{"project exclusion", "", nil,
		`[{"$match": {"objectId": "t6"}}, {"$project": {"meta": 0, "updatedAt": 0}}]`,
		`[{"objectId": "t6", "createdAt": "2023-12-31T22:00:00.000Z", "title": "foxtrot", "priority": 1, "points": 1, "project": ` + aggPtr("Project", "p1") + `}]`},
	{"project a pointer", "", nil,
		`[{"$match": {"objectId": "t5"}}, {"$project": {"_id": 0, "owner": 1}}]`,
		`[{"owner": ` + aggPtr("_User", "u2") + `}]`},
	{"unset", "", nil,
		`[{"$match": {"objectId": "t6"}}, {"$unset": ["meta", "createdAt", "updatedAt", "project"]}]`,
		`[{"objectId": "t6", "title": "foxtrot", "priority": 1, "points": 1}]`},
	{"sortByCount", "", nil,
		`[{"$sortByCount": "$project"}]`,
		`[{"objectId": "p1", "count": 3}, {"objectId": "p2", "count": 2}, {"objectId": "p3", "count": 2}, {"objectId": null, "count": 1}]`},
	{"match after sort and limit", "", nil,
		`[{"$sort": {"priority": -1}}, {"$limit": 5}, {"$match": {"done": true}}, {"$project": {"title": 1}}]`,
		`[{"objectId": "t4", "title": "delta"}, {"objectId": "t8", "title": "hotel"}]`},
	{"regex and $or on computed fields", "", nil,
		`[{"$project": {"t": "$title", "p": "$priority"}}, {"$match": {"$or": [{"t": {"$regex": "^[a-c]"}}, {"p": 3}]}}, {"$project": {"_id": 1}}]`,
		`[{"objectId": "t1"}, {"objectId": "t2"}, {"objectId": "t3"}, {"objectId": "t4"}, {"objectId": "t7"}]`},
	{"group by a path inside an Object", "", nil,
		`[{"$group": {"_id": "$meta.area", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]`,
		`[{"objectId": null, "n": 1}, {"objectId": "api", "n": 2}, {"objectId": "ops", "n": 2}, {"objectId": "web", "n": 3}]`},
	{"project excluding everything", "", nil,
		`[{"$match": {"objectId": "t1"}}, {"$project": {"_id": 0, "createdAt": 0, "updatedAt": 0, "title": 0, "status": 0, "priority": 0,
		  "points": 0, "done": 0, "due": 0, "tags": 0, "meta": 0, "owner": 0, "project": 0}}]`,
		`[{}]`},
}

func testAggregatePipelines(t *testing.T, s store.Store) {
	loadAggFixture(t, s)
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	if len(aggregateCases) < 40 {
		t.Errorf("only %d pipelines", len(aggregateCases))
	}
	for _, c := range aggregateCases {
		class := c.class
		if class == "" {
			class = "Task"
		}
		what := fmt.Sprintf("%s (%s, readACL %q)", c.name, class, c.acl)
		p, err := query.ParsePipelineJSON(mustSchema(t, s, class), resolve, []byte(c.pipeline))
		if err != nil {
			t.Errorf("%s: ParsePipelineJSON: %v", what, err)
			continue
		}
		rows, err := s.Aggregate(ctx, class, p, aclOf(c.acl))
		if err != nil {
			t.Errorf("%s: Aggregate: %v", what, err)
			continue
		}
		if rows == nil {
			t.Errorf("%s: nil rows, want a non-nil slice", what)
		}
		got := make([]parse.Object, len(rows))
		for i, r := range rows {
			got[i] = r
		}
		equalRows(t, what, got, c.want)
	}
}

// testAggregateErrors: pipelines the schema refuses, and a pipeline run on
// another class.
func testAggregateErrors(t *testing.T, s store.Store) {
	loadAggFixture(t, s)
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	sch := mustSchema(t, s, "Task")
	cases := []struct{ pipeline, path string }{
		{`[{"$group": {"_id": "$nope"}}]`, "pipeline[0].$group._id"},
		{`[{"$group": {"_id": null, "t": {"$sum": "$title"}}}]`, "pipeline[0].$group.t.$sum"},
		{`[{"$lookup": {"from": "Nope", "localField": "owner", "foreignField": "_id", "as": "x"}}]`, "pipeline[0].$lookup.from"},
		{`[{"$lookup": {"from": "Project", "localField": "owner", "foreignField": "_id", "as": "x"}}]`, "pipeline[0].$lookup.localField"},
		{`[{"$group": {"_id": "$status", "n": {"$sum": 1}}}, {"$match": {"title": "alpha"}}]`, "pipeline[1].$match.title"},
		{`[{"$out": "Other"}]`, "pipeline[0].$out"},
		// MongoDB's storage form of a pointer is never a field name.
		{`[{"$match": {"_p_owner": "_User$u1"}}]`, "pipeline[0].$match._p_owner"},
		{`[{"$group": {"_id": "$_p_owner"}}]`, "pipeline[0].$group._id"},
	}
	for _, c := range cases {
		_, err := query.ParsePipelineJSON(sch, resolve, []byte(c.pipeline))
		var qe *query.Error
		if !errors.As(err, &qe) {
			t.Errorf("%s: got %v, want a *query.Error", c.pipeline, err)
			continue
		}
		if qe.Path != c.path {
			t.Errorf("%s: Path %q, want %q (%v)", c.pipeline, qe.Path, c.path, err)
		}
	}
	// A $lookup of a missing class keeps the store's error.
	_, err := query.ParsePipelineJSON(sch, resolve, []byte(`[{"$lookup": {"from": "Nope", "localField": "owner", "foreignField": "_id", "as": "x"}}]`))
	wantErr(t, "lookup of a missing class", err, store.ErrClassNotFound)

	p, err := query.ParsePipelineJSON(sch, resolve, []byte(`[{"$count": "n"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Aggregate(ctx, "Project", p, query.NoACLFilter); err == nil || !strings.Contains(err.Error(), "Task") {
		t.Errorf("Aggregate on another class: %v", err)
	}
	// A class that does not exist (the pipeline names it).
	ghost, err := query.ParsePipeline(parse.NewSchema("Ghost"), resolve, []any{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Aggregate(ctx, "Ghost", ghost, query.NoACLFilter)
	wantErr(t, "Aggregate(Ghost)", err, store.ErrClassNotFound)
}

// testAggregateFieldTypes: GeoPoint, Polygon, File and Bytes values come
// out of $lookup, $push, $first, $addToSet and $unwind in their REST form.
func testAggregateFieldTypes(t *testing.T, s store.Store) {
	mustCreateClass(t, s, classFromJSON(t, `{"className": "Spot", "fields": {
	  "name": {"type": "String"}, "loc": {"type": "GeoPoint"}, "area": {"type": "Polygon"},
	  "pic": {"type": "File"}, "raw": {"type": "Bytes"}}, "classLevelPermissions": {}}`))
	mustCreateClass(t, s, classFromJSON(t, `{"className": "Visit", "fields": {
	  "spot": {"type": "Pointer", "targetClass": "Spot"}, "n": {"type": "Number"}}, "classLevelPermissions": {}}`))
	mustCreate(t, s, "Spot", decodeObjects(t, `[
	  {"objectId": "s1", "createdAt": "2024-05-01T00:00:00.000Z", "name": "dock",
	   "loc": {"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25},
	   "area": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1], [1, 1]]},
	   "pic": {"__type": "File", "name": "a.png"}, "raw": {"__type": "Bytes", "base64": "aGk="}},
	  {"objectId": "s2", "createdAt": "2024-05-02T00:00:00.000Z", "name": "pier",
	   "loc": {"__type": "GeoPoint", "latitude": -1, "longitude": 2}, "pic": {"__type": "File", "name": "b.png"}},
	  {"objectId": "s3", "createdAt": "2024-05-03T00:00:00.000Z", "name": "reef", "pic": {"__type": "File", "name": "a.png"}}
	]`))
	mustCreate(t, s, "Visit", decodeObjects(t, `[
	  {"objectId": "v1", "spot": {"__type": "Pointer", "className": "Spot", "objectId": "s1"}, "n": 1},
	  {"objectId": "v2", "spot": {"__type": "Pointer", "className": "Spot", "objectId": "s2"}, "n": 2}
	]`))
	const s1 = `{"objectId": "s1", "createdAt": "2024-05-01T00:00:00.000Z", "updatedAt": "2024-05-01T00:00:00.000Z", "name": "dock",
	  "loc": {"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25},
	  "area": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1], [1, 1], [0, 0]]},
	  "pic": {"__type": "File", "name": "a.png"}, "raw": {"__type": "Bytes", "base64": "aGk="}}`
	const s2 = `{"objectId": "s2", "createdAt": "2024-05-02T00:00:00.000Z", "updatedAt": "2024-05-02T00:00:00.000Z", "name": "pier",
	  "loc": {"__type": "GeoPoint", "latitude": -1, "longitude": 2}, "pic": {"__type": "File", "name": "b.png"}}`
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	cases := []struct{ class, pipeline, want string }{
		{"Visit", `[{"$lookup": {"from": "Spot", "localField": "spot", "foreignField": "_id", "as": "s"}}, {"$project": {"s": 1}}]`,
			`[{"objectId": "v1", "s": [` + s1 + `]}, {"objectId": "v2", "s": [` + s2 + `]}]`},
		{"Visit", `[{"$lookup": {"from": "Spot", "localField": "spot", "foreignField": "_id", "as": "s"}}, {"$unwind": "$s"},
		  {"$project": {"_id": 0, "loc": "$s.loc", "area": "$s.area", "pic": "$s.pic", "raw": "$s.raw"}}]`,
			`[{"loc": {"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25},
			   "area": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1], [1, 1], [0, 0]]},
			   "pic": {"__type": "File", "name": "a.png"}, "raw": {"__type": "Bytes", "base64": "aGk="}},
			  {"loc": {"__type": "GeoPoint", "latitude": -1, "longitude": 2}, "pic": {"__type": "File", "name": "b.png"}}]`},
		{"Spot", `[{"$group": {"_id": null, "locs": {"$push": "$loc"}, "firstArea": {"$first": "$area"}, "firstLoc": {"$first": "$loc"},
		  "pics": {"$addToSet": "$pic"}, "raws": {"$push": "$raw"}, "lastRaw": {"$last": "$raw"}}}]`,
			`[{"objectId": null,
			   "locs": [{"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25}, {"__type": "GeoPoint", "latitude": -1, "longitude": 2}],
			   "firstArea": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1], [1, 1], [0, 0]]},
			   "firstLoc": {"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25},
			   "pics": [{"__type": "File", "name": "a.png"}, {"__type": "File", "name": "b.png"}],
			   "raws": [{"__type": "Bytes", "base64": "aGk="}]}]`},
		{"Spot", `[{"$group": {"_id": "$pic", "n": {"$sum": 1}}}]`,
			`[{"objectId": {"__type": "File", "name": "a.png"}, "n": 2}, {"objectId": {"__type": "File", "name": "b.png"}, "n": 1}]`},
		{"Spot", `[{"$group": {"_id": {"l": "$loc", "p": "$pic"}, "n": {"$sum": 1}}}]`,
			`[{"objectId": {"p": {"__type": "File", "name": "a.png"}}, "n": 1},
			  {"objectId": {"l": {"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25}, "p": {"__type": "File", "name": "a.png"}}, "n": 1},
			  {"objectId": {"l": {"__type": "GeoPoint", "latitude": -1, "longitude": 2}, "p": {"__type": "File", "name": "b.png"}}, "n": 1}]`},
		{"Spot", `[{"$sort": {"name": -1}}, {"$group": {"_id": "$loc", "names": {"$addToSet": "$name"}}}, {"$group": {"_id": null, "locs": {"$addToSet": "$_id"}}}]`,
			`[{"objectId": null, "locs": [{"__type": "GeoPoint", "latitude": -1, "longitude": 2}, {"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25}]}]`},
		{"Spot", `[{"$group": {"_id": null, "locs": {"$push": "$loc"}}}, {"$unwind": {"path": "$locs", "includeArrayIndex": "i"}}, {"$project": {"_id": 0, "locs": 1, "i": 1}}]`,
			`[{"locs": {"__type": "GeoPoint", "latitude": 10.5, "longitude": -20.25}, "i": 0}, {"locs": {"__type": "GeoPoint", "latitude": -1, "longitude": 2}, "i": 1}]`},
	}
	for _, c := range cases {
		p, err := query.ParsePipelineJSON(mustSchema(t, s, c.class), resolve, []byte(c.pipeline))
		if err != nil {
			t.Errorf("%s: ParsePipelineJSON: %v", c.pipeline, err)
			continue
		}
		rows, err := s.Aggregate(ctx, c.class, p, query.NoACLFilter)
		if err != nil {
			t.Errorf("%s: Aggregate: %v", c.pipeline, err)
			continue
		}
		got := make([]parse.Object, len(rows))
		for i, r := range rows {
			got[i] = r
		}
		equalRows(t, c.pipeline, got, c.want)
	}
}

// testAggregateJSONValues: values of unknown type (Array elements, paths
// inside Objects) group, sort and match the same way on every backend:
// by type as MongoDB orders them (null, numbers, strings, objects, arrays,
// booleans), then by value; 1 and "1" are different values.
func testAggregateJSONValues(t *testing.T, s store.Store) {
	mustCreateClass(t, s, classFromJSON(t, `{"className": "Bag", "fields": {"arr": {"type": "Array"}, "o": {"type": "Object"}}, "classLevelPermissions": {}}`))
	mustCreate(t, s, "Bag", decodeObjects(t, `[
	  {"objectId": "b1", "arr": [1, "1", true, null, {"k": "v"}, [2], 2.5, "a", 10], "o": {"v": 10}},
	  {"objectId": "b2", "arr": ["1", 1, false], "o": {"v": "10"}},
	  {"objectId": "b3", "o": {"v": true}},
	  {"objectId": "b4", "o": {"w": 1}}
	]`))
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	cases := []struct{ pipeline, want string }{
		{`[{"$unwind": "$arr"}, {"$group": {"_id": "$arr", "n": {"$sum": 1}}}, {"$sort": {"_id": 1}}]`,
			`[{"objectId": null, "n": 1}, {"objectId": 1, "n": 2}, {"objectId": 2.5, "n": 1}, {"objectId": 10, "n": 1},
			  {"objectId": "1", "n": 2}, {"objectId": "a", "n": 1}, {"objectId": {"k": "v"}, "n": 1}, {"objectId": [2], "n": 1},
			  {"objectId": false, "n": 1}, {"objectId": true, "n": 1}]`},
		{`[{"$unwind": "$arr"}, {"$group": {"_id": "$arr", "n": {"$sum": 1}}}, {"$sort": {"_id": -1}}, {"$limit": 3}]`,
			`[{"objectId": true, "n": 1}, {"objectId": false, "n": 1}, {"objectId": [2], "n": 1}]`},
		{`[{"$unwind": "$arr"}, {"$match": {"arr": 1}}, {"$project": {"_id": 1}}]`,
			`[{"objectId": "b1"}, {"objectId": "b2"}]`},
		{`[{"$unwind": "$arr"}, {"$match": {"arr": {"$in": ["1", true]}}}, {"$project": {"arr": 1}}]`,
			`[{"objectId": "b1", "arr": "1"}, {"objectId": "b1", "arr": true}, {"objectId": "b2", "arr": "1"}]`},
		{`[{"$sort": {"o.v": -1}}, {"$project": {"v": "$o.v"}}]`,
			`[{"objectId": "b3", "v": true}, {"objectId": "b2", "v": "10"}, {"objectId": "b1", "v": 10}, {"objectId": "b4"}]`},
		{`[{"$group": {"_id": null, "vs": {"$push": "$o.v"}, "first": {"$first": "$o.v"}, "last": {"$last": "$o.v"}}}]`,
			`[{"objectId": null, "vs": [10, "10", true], "first": 10}]`},
	}
	for _, c := range cases {
		p, err := query.ParsePipelineJSON(mustSchema(t, s, "Bag"), resolve, []byte(c.pipeline))
		if err != nil {
			t.Errorf("%s: ParsePipelineJSON: %v", c.pipeline, err)
			continue
		}
		rows, err := s.Aggregate(ctx, "Bag", p, query.NoACLFilter)
		if err != nil {
			t.Errorf("%s: Aggregate: %v", c.pipeline, err)
			continue
		}
		got := make([]parse.Object, len(rows))
		for i, r := range rows {
			got[i] = r
		}
		equalRows(t, c.pipeline, got, c.want)
	}
}

// testAggregateGovernance: the hooks the governed scope uses reach the
// SQL: a row filter on a $lookup'd class, a filter on the class rows, and
// the read ACL of a $match's sub-queries.
func testAggregateGovernance(t *testing.T, s store.Store) {
	loadAggFixture(t, s)
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	run := func(p *query.Pipeline, acl []string, want string) {
		t.Helper()
		rows, err := s.Aggregate(ctx, "Task", p, aclOf(acl))
		if err != nil {
			t.Errorf("Aggregate: %v", err)
			return
		}
		got := make([]parse.Object, len(rows))
		for i, r := range rows {
			got[i] = r
		}
		equalRows(t, "governed pipeline", got, want)
	}
	p, err := query.ParsePipelineJSON(mustSchema(t, s, "Task"), resolve, []byte(`[
	  {"$match": {"owner": {"$inQuery": {"className": "_User", "where": {"username": {"$in": ["ada", "cy"]}}}}}},
	  {"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "who"}},
	  {"$project": {"names": "$who"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	// Unset, a sub-query's ACL filter reaches no row: read as the master key.
	if err := p.Subqueries(func(q *query.Query) error { q.ReadACL = query.NoACLFilter; return nil }); err != nil {
		t.Fatal(err)
	}
	run(p, nil, `[{"objectId": "t1", "names": [`+aggU1+`]}, {"objectId": "t3", "names": [`+aggU1+`]},
	  {"objectId": "t4", "names": [`+aggU3+`]}, {"objectId": "t7", "names": [`+aggU1+`]}, {"objectId": "t8", "names": [`+aggU3+`]}]`)

	// The scope's row rule for the looked-up class.
	lookups := p.Lookups()
	if len(lookups) != 1 || lookups[0].From.ClassName != parse.ClassUser {
		t.Fatalf("Lookups() = %v", lookups)
	}
	lookups[0].Filter = where(t, s, parse.ClassUser, `{"username": {"$ne": "ada"}}`)
	// The scope's row rule for the class itself.
	f := p.WithFilter(where(t, s, "Task", `{"priority": {"$gte": 2}}`))
	run(f, nil, `[{"objectId": "t4", "names": [`+aggU3+`]}, {"objectId": "t7", "names": []}, {"objectId": "t8", "names": [`+aggU3+`]}]`)

	// The read ACL of the sub-query: u3 is invisible to the public, so
	// $inQuery finds only ada's tasks.
	n := 0
	if err := f.Subqueries(func(q *query.Query) error {
		n++
		q.ReadACL = query.ACLEntries("*")
		return nil
	}); err != nil || n != 1 {
		t.Fatalf("Subqueries: %d sub-queries, %v", n, err)
	}
	run(f, []string{"*", "u1"}, `[{"objectId": "t7", "names": []}]`)
}

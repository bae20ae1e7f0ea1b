package compat

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
)

type pipelineSpec struct {
	class    string
	pipeline []any
	ordered  bool // the pipeline sorts totally: compare in order
}

type m = map[string]any

func demoPipelines() []pipelineSpec {
	count := m{"$sum": 1}
	var out []pipelineSpec
	add := func(class string, ordered bool, stages ...any) {
		out = append(out, pipelineSpec{class: class, pipeline: stages, ordered: ordered})
	}
	// Groups by one field, with every accumulator.
	for _, f := range []string{"status", "priority", "type", "escalated"} {
		add("Ticket", false, m{"$group": m{"_id": "$" + f, "n": count}})
		add("Ticket", false, m{"$group": m{"_id": "$" + f, "avg": m{"$avg": "$estimateHours"}, "max": m{"$max": "$number"}, "min": m{"$min": "$number"}}})
	}
	add("Ticket", false, m{"$match": m{"status": "open"}}, m{"$group": m{"_id": "$priority", "n": count}})
	add("Ticket", false, m{"$match": m{"priority": m{"$lte": 2}}}, m{"$group": m{"_id": "$type", "hours": m{"$sum": "$estimateHours"}}})
	add("Ticket", true, m{"$group": m{"_id": "$status", "n": count}}, m{"$sort": m{"n": -1, "_id": 1}})
	add("Ticket", true, m{"$group": m{"_id": "$type", "n": count}}, m{"$sort": m{"_id": 1}}, m{"$limit": 2})
	add("Ticket", true, m{"$group": m{"_id": "$priority", "n": count}}, m{"$sort": m{"_id": -1}}, m{"$skip": 1})
	add("Ticket", false, m{"$group": m{"_id": nil, "n": count, "hours": m{"$sum": "$estimateHours"}}})
	add("Ticket", false, m{"$match": m{"escalated": true}}, m{"$count": "escalated"})
	add("Ticket", false, m{"$group": m{"_id": m{"status": "$status", "type": "$type"}, "n": count}})
	add("Ticket", false, m{"$group": m{"_id": "$project", "n": count}})
	add("Ticket", false, m{"$group": m{"_id": "$org", "n": count}})
	add("Ticket", false, m{"$match": m{"org": ptr("Organization", demo.OrgAcmeID)}}, m{"$group": m{"_id": "$status", "n": count}})
	add("Ticket", true, m{"$match": m{"project": ptr("Project", demo.ProjectWebsiteID)}}, m{"$sort": m{"number": 1}}, m{"$limit": 5}, m{"$project": m{"number": 1, "status": 1}})
	add("Ticket", true, m{"$sort": m{"createdAt": -1, "_id": 1}}, m{"$limit": 3}, m{"$project": m{"title": 1}})
	add("Ticket", false, m{"$unwind": "$tags"}, m{"$group": m{"_id": "$tags", "n": count}})
	add("Ticket", true, m{"$unwind": "$tags"}, m{"$group": m{"_id": "$tags", "n": count}}, m{"$sort": m{"n": -1, "_id": 1}}, m{"$limit": 5})
	add("Ticket", false, m{"$group": m{"_id": m{"$year": "$createdAt"}, "n": count}})
	add("Ticket", false, m{"$group": m{"_id": m{"year": m{"$year": "$createdAt"}, "month": m{"$month": "$createdAt"}}, "n": count}})
	add("Ticket", false, m{"$match": m{"resolvedAt": m{"$exists": true}}}, m{"$group": m{"_id": "$status", "n": count}})
	add("Ticket", false, m{"$match": m{"createdAt": m{"$gte": date("2025-06-01T00:00:00.000Z")}}}, m{"$group": m{"_id": "$status", "n": count}})
	add("Project", false, m{"$group": m{"_id": "$status", "n": count, "budget": m{"$sum": "$budget"}}})
	add("Project", false, m{"$group": m{"_id": "$archived", "n": count}})
	add("Project", false, m{"$group": m{"_id": "$org", "avg": m{"$avg": "$budget"}}})
	add("Project", true, m{"$sort": m{"budget": -1, "_id": 1}}, m{"$limit": 5}, m{"$project": m{"name": 1, "budget": 1}})
	add("Comment", false, m{"$group": m{"_id": "$internal", "n": count, "likes": m{"$sum": "$likes"}}})
	add("Comment", false, m{"$group": m{"_id": "$author", "n": count}})
	add("Comment", false, m{"$match": m{"likes": m{"$gt": 2}}}, m{"$count": "liked"})
	add("Customer", false, m{"$group": m{"_id": "$tier", "n": count, "ltv": m{"$avg": "$lifetimeValue"}}})
	add("Customer", false, m{"$group": m{"_id": "$active", "n": count}})
	add("Customer", false, m{"$group": m{"_id": "$address.country", "n": count}})
	add("Order", false, m{"$group": m{"_id": "$status", "n": count, "total": m{"$sum": "$total"}}})
	add("Order", false, m{"$group": m{"_id": "$currency", "max": m{"$max": "$total"}, "min": m{"$min": "$total"}}})
	add("Order", false, m{"$match": m{"paid": true}}, m{"$group": m{"_id": "$customer", "n": count}})
	add("Order", false, m{"$unwind": "$items"}, m{"$count": "lines"})
	add("Organization", false, m{"$group": m{"_id": "$plan", "n": count, "seats": m{"$sum": "$seats"}}})
	add("Organization", true, m{"$sort": m{"seats": -1, "_id": 1}}, m{"$project": m{"name": 1, "seats": 1}})
	add("Product", false, m{"$group": m{"_id": "$category", "n": count, "avg": m{"$avg": "$price"}}})
	add("Product", false, m{"$match": m{"inStock": false}}, m{"$count": "out"})
	add("_User", false, m{"$group": m{"_id": "$emailVerified", "n": count}})
	add("_Role", false, m{"$count": "roles"})
	return out
}

// The differential suite's pipelines: Parse Server's aggregate endpoint
// (master key only) against parsemcp's aggregate tool as the master key.
func TestDifferentialDemoPipelines(t *testing.T) {
	db, ps := demoDB(t, 600)
	p := newPair(t, db, ps, agent.Readonly)
	all := demoPipelines()
	if len(all) < 40 {
		t.Fatalf("%d pipelines, want at least 40", len(all))
	}
	master := who{name: "master"}
	d := &diffs{t: t}
	for _, sp := range all {
		d.ran++
		where := sp.class + " " + jsonString(sp.pipeline)
		psOut, psErr := p.rest(master, http.MethodGet, "/aggregate/"+sp.class, url.Values{"pipeline": {jsonString(sp.pipeline)}})
		mcOut, mcErr := p.tool(master, "aggregate", map[string]any{"class_name": sp.class, "pipeline": sp.pipeline})
		if psErr && !mcErr {
			msg, _ := psOut["error"].(string)
			switch {
			case strings.Contains(msg, `column "_id" does not exist`):
				d.met(knownSortID)
				continue
			case strings.HasPrefix(msg, "Invalid field name: ") && strings.Contains(msg, "."):
				d.met(knownGroupDotted)
				continue
			case strings.Contains(msg, "invalid input syntax") && strings.Contains(jsonString(sp.pipeline), `"$exists"`):
				d.met(knownAggExists)
				continue
			case strings.Contains(msg, `syntax error at or near "GROUP"`) && hasStage(sp.pipeline, "$skip"):
				d.met(knownSkipAfterSort)
				continue
			}
		}
		if psErr || mcErr {
			if psErr != mcErr {
				d.add(sp.class+" pipeline: one side refuses", "%s\n    Parse Server %s\n    parsemcp     %s", where, brief(psOut), brief(mcOut))
			}
			continue
		}
		if hasStage(sp.pipeline, "$unwind") && jsonString(psOut) != jsonString(mcOut) {
			d.met(knownUnwind)
			continue
		}
		if strings.Contains(jsonString(sp.pipeline), `{"$year":`) && jsonString(psOut["results"]) != jsonString(mcOut["results"]) {
			d.met(knownGroupDateParts)
			continue
		}
		if hasStage(sp.pipeline, "$count") {
			d.met(knownCountStage)
			continue
		}
		a, b := rows(psOut["results"]), rows(mcOut["results"])
		if len(a) == 0 && len(b) > 0 && strings.Contains(jsonString(sp.pipeline), `"__type":"Pointer"`) {
			d.met(knownMatchPointer)
			continue
		}
		for _, r := range a {
			stripFileURLs(r)
			if stripRelations(r) {
				d.met(knownAggRelations)
			}
		}
		if dropNullAccumulators(a, b) {
			d.met(knownNullAccumulator)
		}
		if !sp.ordered {
			sortRows(a)
			sortRows(b)
		}
		if jsonString(a) != jsonString(b) {
			d.add(sp.class+" pipeline: results differ", "%s\n    Parse Server %s\n    parsemcp     %s", where, brief(a), brief(b))
		}
	}
	d.report("pipelines")
}

func hasStage(p []any, name string) bool {
	for _, st := range p {
		if _, ok := st.(map[string]any)[name]; ok {
			return true
		}
	}
	return false
}

// stripRelations removes Relation markers from an aggregate row.
func stripRelations(r map[string]any) bool {
	found := false
	for k, v := range r {
		if mv, ok := v.(map[string]any); ok && mv["__type"] == "Relation" {
			delete(r, k)
			found = true
		}
	}
	return found
}

// dropNullAccumulators removes from parsemcp's group rows the zero sums
// Parse Server leaves out (its SQL SUM over no values is NULL, and a null
// accumulator is omitted), matching rows by objectId.
func dropNullAccumulators(ps, mc []map[string]any) bool {
	byKey := map[string]map[string]any{}
	for _, r := range ps {
		byKey[jsonString(r["objectId"])] = r
	}
	found := false
	for _, r := range mc {
		p := byKey[jsonString(r["objectId"])]
		if p == nil {
			continue
		}
		for k, v := range r {
			if _, has := p[k]; !has && (v == 0.0 || v == nil) {
				delete(r, k)
				found = true
			}
		}
	}
	return found
}

func sortRows(rs []map[string]any) {
	sort.Slice(rs, func(i, j int) bool { return jsonString(rs[i]) < jsonString(rs[j]) })
}

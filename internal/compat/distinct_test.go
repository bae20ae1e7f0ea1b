package compat

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

// distinct through Parse Server's aggregate endpoint (?distinct=, master
// key only) and parsemcp's distinct tool: the same values (Pointer
// objects for a Pointer field), dotted paths into Object fields included.
func TestDifferentialDemoDistinct(t *testing.T) {
	db, ps := demoDB(t, 600)
	p := newPair(t, db, ps, agent.Readonly)
	master := who{name: "master"}
	d := &diffs{t: t}
	for _, c := range []struct{ class, field string }{
		{"Ticket", "status"}, {"Ticket", "priority"}, {"Ticket", "type"}, {"Ticket", "org"}, {"Ticket", "project"},
		{"Ticket", "assignee"}, {"Project", "status"}, {"Project", "owner"}, {"Customer", "tier"},
		{"Customer", "address.city"}, {"Customer", "address.country"}, {"Organization", "plan"},
		{"Organization", "settings.currency"}, {"Order", "status"}, {"Order", "customer"}, {"Comment", "author"},
	} {
		d.ran++
		where := c.class + " distinct " + c.field
		psOut, psErr := p.rest(master, http.MethodGet, "/aggregate/"+c.class, url.Values{"distinct": {c.field}})
		mcOut, mcErr := p.tool(master, "distinct", map[string]any{"class_name": c.class, "field": c.field, "limit": 1000})
		if msg, _ := psOut["error"].(string); psErr && !mcErr && strings.HasPrefix(msg, "Cannot create property '") {
			d.met(knownAggRelations) // it tries to add the class's Relation markers to each value
			continue
		}
		if psErr || mcErr {
			if psErr != mcErr {
				d.add(c.class+" distinct: one side refuses", "%s\n    Parse Server %s\n    parsemcp     %s", where, brief(psOut), brief(mcOut))
			}
			continue
		}
		a, _ := psOut["results"].([]any)
		b, _ := mcOut["values"].([]any)
		var av []any
		for _, v := range a {
			if v == nil {
				continue // parsemcp leaves out the missing-value group
			}
			if mv, ok := v.(map[string]any); ok && stripRelations(mv) {
				d.met(knownAggRelations)
			}
			av = append(av, v)
		}
		if !sameSet(av, b) {
			d.add(c.class+" distinct: values differ", "%s\n    Parse Server %s\n    parsemcp     %s", where, brief(av), brief(b))
		}
	}
	d.report("distinct")
}

func sameSet(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, v := range a {
		seen[jsonString(v)]++
	}
	for _, v := range b {
		seen[jsonString(v)]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// Objects rendered as a CSV table of the columns asked for, a column
// reaching through a pointer by its path; next_call continues the table.
func TestExportData(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	args := map[string]any{"class_name": "Ticket", "order": "objectId", "limit": 3,
		"columns": []any{"title", map[string]any{"field": "project.name", "as": "Project"}, "priority"}}
	out := e.ok("export_data", args)
	if out["output"] != "title,Project,priority\nFuel leak,Apollo,1\nPaint hull,Apollo,3\nIce survey,Borealis,2\n" {
		t.Fatalf("output:\n%v", out["output"])
	}
	if !cmp.Equal(out["headers"], []any{"title", "Project", "priority"}) || out["row_count"] != float64(3) || out["format"] != "csv" {
		t.Fatalf("%v", out)
	}
	out = e.next("export_data", out)
	if out["output"] != "title,Project,priority\nOrbit calc,Comet,1\nHidden task,,5\n" || out["truncated"] != nil {
		t.Fatalf("page 2:\n%v", out["output"])
	}
}

// The formats: markdown (also as "md") and a fixed-width table (also as
// "text"); any other is refused with the ones there are.
func TestExportDataFormats(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	args := func(format string) map[string]any {
		return map[string]any{"class_name": "Ticket", "columns": []string{"title", "status"}, "where": map[string]any{"objectId": t1}, "format": format}
	}
	md := "| title | status |\n| --- | --- |\n| Fuel leak | open |\n"
	for _, f := range []string{"markdown", "md", "Markdown"} {
		out := e.ok("export_data", args(f))
		if out["output"] != md || out["format"] != "markdown" {
			t.Fatalf("%s: %v\n%v", f, out["format"], out["output"])
		}
	}
	table := e.ok("export_data", args("table"))
	text := e.ok("export_data", args("text")) // the former name of table
	if table["output"] != "+-----------+--------+\n| title     | status |\n+-----------+--------+\n| Fuel leak | open   |\n+-----------+--------+\n" ||
		table["format"] != "table" || text["output"] != table["output"] || text["format"] != "table" {
		t.Fatalf("table: %v\ntext: %v", table, text)
	}
	e.refused("export_data", args("xml"), tools.CodeInvalidArgument, `argument "format" must be one of csv, markdown or table; got "xml"`)
}

// A pipeline's rows export as a table of its output fields; a where,
// order or include beside it is refused.
func TestExportDataPipeline(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	pipeline := []any{
		map[string]any{"$group": map[string]any{"_id": "$status", "n": map[string]any{"$sum": 1}}},
		map[string]any{"$sort": map[string]any{"objectId": 1}},
	}
	out := e.ok("export_data", map[string]any{"class_name": "Ticket", "pipeline": pipeline})
	if out["output"] != "objectId,n\nclosed,1\nin_progress,1\nopen,3\n" {
		t.Fatalf("output:\n%v", out["output"])
	}
	out = e.ok("export_data", map[string]any{"class_name": "Ticket", "pipeline": pipeline, "columns": map[string]any{"n": "Tickets"}, "limit": 1})
	if out["output"] != "Tickets\n1\n" || out["next_call"] == nil {
		t.Fatalf("columns of a pipeline:\n%v", out)
	}
	e.refused("export_data", map[string]any{"class_name": "Ticket", "pipeline": pipeline, "where": map[string]any{"status": "open"}}, tools.CodeInvalidArgument, `argument "where" does not combine with pipeline`)
	e.refused("export_data", map[string]any{"class_name": "Ticket", "pipeline": pipeline, "columns": []string{"title"}}, tools.CodeInvalidArgument, `the pipeline's rows have no field "title"`)
}

// A user exports only the rows and the pointed-to objects it may read; a
// column on a field it may not see is refused as unknown.
func TestExportDataACL(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {AgentFields: []string{"title", "project"}}}}
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001")).withCatalog(cat)
	out := e.ok("export_data", map[string]any{"class_name": "Ticket", "order": "objectId", "columns": []string{"title", "project.name"}})
	if out["output"] != "title,project.name\nFuel leak,Apollo\nPaint hull,Apollo\nIce survey,\nOrbit calc,\n" {
		t.Fatalf("output:\n%v", out["output"])
	}
	e.refused("export_data", map[string]any{"class_name": "Ticket", "columns": []string{"status"}}, fieldDenied, `columns[0]: "status" is not a field of Ticket`)
	mustNotMention(t, e.ok("export_data", map[string]any{"class_name": "Ticket"}), "open", "closed")
	e.refused("export_data", map[string]any{"class_name": "Payroll"}, tools.CodePermissionDenied, "class-level permissions of Payroll")
}

func TestExportDataArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.refused("export_data", map[string]any{"class_name": "Ticket", "limit": 10001}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 10000`)
	e.refused("export_data", map[string]any{"class_name": "Ticket", "columns": []string{"title", "nope"}}, fieldDenied, `columns[1]: "nope" is not a field of Ticket`)
	e.refused("export_data", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, fieldDenied, `"nope" is not a field of Ticket`)
	e.refused("export_data", map[string]any{"class_name": "Nope"}, classNotFound, `class "Nope" was not found`)
}

// With full scans refused, export_data is refused like query_class for a
// find and like aggregate for a pipeline.
func TestExportDataFullScanGuard(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).refusingScans(2)
	e.refused("export_data", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "Fuel leak"}}, scanRefused, ticketScanRefused)
	e.refused("export_data", map[string]any{"class_name": "Ticket", "pipeline": `[{"$project":{"title":1}}]`}, scanRefused, ticketScanRefused)
	e.refused("export_data", map[string]any{"class_name": "Ticket", "pipeline": `[{"$sort":{"title":1}},{"$match":{"objectId":"t000000001"}}]`}, scanRefused, ticketScanRefused)
	out := e.ok("export_data", map[string]any{"class_name": "Ticket", "pipeline": `[{"$match":{"objectId":"t000000001"}},{"$project":{"title":1}}]`, "columns": []string{"title"}})
	if out["row_count"] != float64(1) {
		t.Fatalf("an indexed leading $match: %v", out)
	}
	e.withCatalog(allowScans("Ticket")).ok("export_data", map[string]any{"class_name": "Ticket", "pipeline": `[{"$project":{"title":1}}]`})
}

package sqlcompile_test

import (
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// TestCompilePipelineBindsValues: values never reach the SQL text.
func TestCompilePipelineBindsValues(t *testing.T) {
	p, err := query.ParsePipelineJSON(fuzzSchemas()["Item"], fuzzResolve, []byte(`[{"$match": {"name": "Robert'); DROP TABLE x;--"}},
	  {"$addFields": {"k": "it's"}}, {"$group": {"_id": {"kk": "$k"}, "s": {"$sum": 7.5}}}, {"$limit": 3}]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []sqlcompile.PipelineDialect{sqlite.PipelineDialect(), postgres.PipelineDialect()} {
		sqlText, args := sqlcompile.CompilePipeline(d, p, query.ACLEntries("*", "role:x'y"))
		for _, bad := range []string{"Robert", "it's", "x'y", "7.5", "kk"} {
			if strings.Contains(sqlText, bad) {
				t.Errorf("SQL contains %q: %s", bad, sqlText)
			}
		}
		if len(args) == 0 {
			t.Errorf("no bind arguments")
		}
	}
}

package sqlkit

import (
	"sort"

	"github.com/parsemcp/parsemcp/parse"
)

// JoinTable names the table of a Relation field, as Parse Server does.
func JoinTable(field, class string) string { return "_Join:" + field + ":" + class }

// JoinTables lists the relation join tables of sch, sorted.
func JoinTables(sch parse.Schema) []string {
	var out []string
	for _, name := range sch.FieldNames() {
		if f := sch.Fields[name]; f.Type == parse.TypeRelation {
			out = append(out, JoinTable(name, sch.ClassName))
		}
	}
	sort.Strings(out)
	return out
}

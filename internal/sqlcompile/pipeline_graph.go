package sqlcompile

import (
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// $graphLookup: a recursive $lookup.

// graphLookup renders the search as a recursive CTE over the governed
// rows of From: (root row, object, depth), at most MaxDepth+1 levels, each
// object kept at its least depth.
func (c *pcompiler) graphLookup(s *query.GraphLookupStage, prev string, in []query.Field) string {
	where := query.AndOf(s.Filter, s.Restrict)
	body := "SELECT * FROM " + c.d.Ident(s.From.ClassName)
	if w := c.b.Where(&query.Query{Where: where, ReadACL: c.readACL}); w != "" {
		body += " WHERE " + w
	}
	cand := c.cte(body)
	id := c.d.Ident(parse.FieldObjectID)
	to, from := c.d.Ident(s.ConnectTo), c.d.Ident(s.ConnectFrom)
	start := c.operand(s.Start, "p")
	maxDepth := "CAST(" + c.b.Param(int64(s.MaxDepth)) + " AS BIGINT)"
	found := c.recursiveCTE([]string{"root", "id", "depth"}, func(self string) string {
		return "SELECT " + c.col("p", ordCol) + ", f." + id + ", CAST(0 AS BIGINT) FROM " + prev + " AS p JOIN " + cand + " AS f ON f." + to + " = " + start +
			" UNION SELECT r.root, f." + id + ", r.depth + 1 FROM " + self + " AS r JOIN " + cand + " AS g ON g." + id + " = r.id JOIN " +
			cand + " AS f ON f." + to + " = g." + from + " WHERE r.depth < " + maxDepth
	})
	least := c.cte("SELECT root, id, min(depth) AS depth FROM " + found + " GROUP BY root, id")
	fields := query.ClassFields(s.Found())
	keys := make([]string, len(fields))
	vals := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = c.b.Param(f.Name)
		if f.Name == s.DepthField {
			vals[i] = c.d.ToJSON(c.d.Number("r.depth"), f.Type)
			continue
		}
		vals[i] = c.d.ToJSON(c.col("f", f.Name), f.Type)
	}
	sub := "(SELECT " + c.d.JSONArrayAgg(c.d.JSONObject(keys, vals), "", "f."+id+" ASC") +
		" FROM " + least + " AS r JOIN " + cand + " AS f ON f." + id + " = r.id WHERE r.root = " + c.col("p", ordCol) + ")"
	return c.joinArray(s.Output(), s.As, sub, prev)
}

package sqlcompile

import (
	"strings"

	"github.com/parsemcp/parsemcp/query"
)

// $facet and $unionWith: stages holding pipelines of their own.

func (c *pcompiler) facet(s *query.FacetStage, prev string) string {
	sel := make([]string, 0, len(s.Facets)+1)
	for _, f := range s.Facets {
		last, shape := c.stages(f.Pipeline.Stages, prev, f.Pipeline.Input)
		keys := make([]string, len(shape))
		vals := make([]string, len(shape))
		for i, fl := range shape {
			keys[i] = c.b.Param(fl.Name)
			vals[i] = c.d.ToJSON(c.col("f", fl.Name), fl.Type)
		}
		agg := c.d.JSONArrayAgg(c.d.JSONObject(keys, vals), "", c.col("f", ordCol)+" ASC")
		sel = append(sel, c.as("(SELECT "+agg+" FROM "+last+" AS f)", f.Name))
	}
	sel = append(sel, c.as("1", ordCol))
	return c.cte("SELECT " + strings.Join(sel, ", "))
}

func (c *pcompiler) unionWith(s *query.UnionWithStage, prev string, in []query.Field) string {
	sub, subShape := c.pipeline(s.Pipeline)
	branch := func(from string, shape []query.Field, src string) string {
		sel := make([]string, 0, len(s.Output())+2)
		for _, f := range s.Output() {
			if query.FieldIndex(shape, f.Name) >= 0 {
				sel = append(sel, c.col("x", f.Name))
			} else {
				sel = append(sel, c.as("NULL", f.Name))
			}
		}
		sel = append(sel, c.as(src, "_src"), c.as("row_number() OVER (ORDER BY "+c.col("x", ordCol)+")", "_o"))
		return "SELECT " + strings.Join(sel, ", ") + " FROM " + from + " AS x"
	}
	u := c.cte(branch(prev, in, "0") + " UNION ALL " + branch(sub, subShape, "1"))
	sel := make([]string, 0, len(s.Output())+1)
	for _, f := range s.Output() {
		sel = append(sel, c.col("u", f.Name))
	}
	sel = append(sel, c.as("row_number() OVER (ORDER BY "+c.col("u", "_src")+", "+c.col("u", "_o")+")", ordCol))
	return c.cte("SELECT " + strings.Join(sel, ", ") + " FROM " + u + " AS u")
}

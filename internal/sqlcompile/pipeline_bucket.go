package sqlcompile

import (
	"encoding/json"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// $bucket and $bucketAuto: a CASE over the boundaries, and a recursive
// walk for $bucketAuto's.

// bucketKey renders the bucket of op's value: CASE over the boundaries.
func (c *pcompiler) bucketKey(op query.Operand, from string) string {
	k := op.Bucket
	v := c.operand(*op.Arg, from)
	if op.Arg.Type.JSONForm() {
		v = c.d.FromJSON(v, k.Boundaries[0].Type)
	}
	text := k.Boundaries[0].Type.Kind == parse.TypeString
	if text {
		v = c.d.CodePointOrder(v)
	}
	lit := func(o query.Operand) string {
		if !k.JSON {
			return c.operand(o, from)
		}
		b, _ := json.Marshal(o.Const) // numbers, strings, ISO dates, booleans
		return c.d.Literal(c.b.Param(string(b)), query.Type{Kind: query.TypeJSON})
	}
	less := func(o query.Operand) string {
		b := c.operand(o, from)
		if text {
			b = c.d.CodePointOrder(b)
		}
		return v + " < " + b
	}
	var sb strings.Builder
	sb.WriteString("(CASE WHEN " + less(k.Boundaries[0]) + " THEN " + lit(k.Default))
	for i := 1; i < len(k.Boundaries); i++ {
		sb.WriteString(" WHEN " + less(k.Boundaries[i]) + " THEN " + lit(k.Boundaries[i-1]))
	}
	sb.WriteString(" ELSE " + lit(k.Default) + " END)")
	return sb.String()
}

// bucketAuto renders $bucketAuto: the rows numbered in By order, the
// buckets' first positions (a recursive walk: a bucket takes about n/N
// rows, then every further row equal to its last one), each row's bucket
// bounds, then the $group.
func (c *pcompiler) bucketAuto(s *query.BucketAutoStage, prev string, in []query.Field) string {
	v := c.operand(s.By, "p")
	order := append(c.orderKeys(v, s.By.Type, false), c.col("p", ordCol)+" ASC")
	peers := c.orderKeys(v, s.By.Type, false)
	sel := c.passthrough(in)
	sel = append(sel,
		c.as(v, "_v"),
		c.as("row_number() OVER (ORDER BY "+strings.Join(order, ", ")+") - 1", ordCol),
		c.as("count(*) OVER (ORDER BY "+strings.Join(peers, ", ")+")", "_end"),
		c.as("count(*) OVER ()", "_n"))
	rows := c.cte("SELECT " + strings.Join(sel, ", ") + " FROM " + prev + " AS p")
	n := "CAST(" + c.b.Param(int64(s.N)) + " AS BIGINT)"
	// About n/N rows a bucket, rounded half up, at least 1.
	size := "(CASE WHEN (2 * a._n + " + n + ") / (2 * " + n + ") < 1 THEN 1 ELSE (2 * a._n + " + n + ") / (2 * " + n + ") END)"
	last := "a._n - 1"
	ord := "a." + c.d.Ident(ordCol)
	starts := c.recursiveCTE([]string{"i", "s"}, func(self string) string {
		return "SELECT CAST(0 AS BIGINT), CAST(0 AS BIGINT) FROM " + rows + " AS a WHERE " + ord + " = 0" +
			" UNION ALL SELECT b.i + 1, a._end FROM " + self + " AS b JOIN " + rows + " AS a ON " + ord +
			" = (CASE WHEN b.s + " + size + " - 1 < " + last + " THEN b.s + " + size + " - 1 ELSE " + last + " END)" +
			" WHERE b.i + 1 < " + n + " AND a._end < a._n"
	})
	at := func(pos string) string {
		return "(SELECT a._v FROM " + rows + " AS a WHERE " + ord + " = " + pos + ")"
	}
	next := "(SELECT b2.s FROM " + starts + " AS b2 WHERE b2.i = b.i + 1)"
	// Per bucket: its first position, the next bucket's (NULL for the
	// last), and its bounds' values.
	bounds := c.cte("SELECT b.s, " + next + " AS nx, " + at("b.s") + " AS lo, " +
		at("COALESCE("+next+", (SELECT max(a._n) - 1 FROM "+rows+" AS a))") + " AS hi FROM " + starts + " AS b")
	sel = c.passthrough(in)
	sel = append(sel, c.as("k.lo", query.BucketMin), c.as("k.hi", query.BucketMax), c.col("p", ordCol))
	tagged := c.cte("SELECT " + strings.Join(sel, ", ") + " FROM " + rows + " AS p JOIN " + bounds + " AS k ON p." + c.d.Ident(ordCol) +
		" >= k.s AND (k.nx IS NULL OR p." + c.d.Ident(ordCol) + " < k.nx)")
	return c.group(s.Group, tagged)
}

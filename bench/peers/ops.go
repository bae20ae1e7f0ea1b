package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/tools"
)

// The measured operations: one find page, one count, one $group and one
// get by objectId, on the demo's Ticket class, as the master key sees it.
const (
	opFind  = "find"
	opCount = "count"
	opGroup = "group"
	opGet   = "get"
)

var allOps = []string{opFind, opCount, opGroup, opGet}

// spec is one operation as each kind of target asks for it.
type spec struct {
	op string
	// tool and args: the parsemcp MCP call.
	tool string
	args string
	// sql and sqlArgs: the statement parsemcp runs for it ($n parameters),
	// what the pgx target runs; literal is the same with the arguments
	// inlined, for the SQL-running peers (Toolbox, dbhub).
	sql     string
	sqlArgs []any
	literal string
	// rest is the Parse Server REST path and query (after /parse).
	rest string
}

// specs renders every operation from the store's own SQL compilers, so the
// pgx baseline and the SQL peers run what parsemcp runs.
func specs(ctx context.Context, st *postgres.Store) (map[string]*spec, error) {
	class := demo.ClassTicket
	sch, err := st.Schema(ctx, class)
	if err != nil {
		return nil, err
	}
	whereJSON := map[string]any{"status": "open"}
	w, err := query.ParseWhere(sch, whereJSON)
	if err != nil {
		return nil, err
	}
	order, err := query.ParseOrder(sch, "-createdAt")
	if err != nil {
		return nil, err
	}
	out := map[string]*spec{}

	// find: query_class asks one row more than the page to know whether a
	// next page exists.
	q := &query.Query{Class: class, Where: w, Order: order, Limit: 101, ReadACL: query.NoACLFilter}
	text, args, _ := st.FindSQL(sch, q)
	out[opFind] = &spec{op: opFind, tool: "query_class",
		args: `{"class_name":"Ticket","where":{"status":"open"},"order":"-createdAt","limit":100}`,
		sql:  text, sqlArgs: args,
		rest: "/classes/Ticket?" + url.Values{"where": {`{"status":"open"}`}, "order": {"-createdAt"}, "limit": {"100"}}.Encode()}

	text, args = st.CountSQL(&query.Query{Class: class, Where: w, ReadACL: query.NoACLFilter})
	out[opCount] = &spec{op: opCount, tool: "count_objects",
		args: `{"class_name":"Ticket","where":{"status":"open"}}`,
		sql:  text, sqlArgs: args,
		rest: "/classes/Ticket?" + url.Values{"where": {`{"status":"open"}`}, "count": {"1"}, "limit": {"0"}}.Encode()}

	stages := `[{"$group":{"_id":"$status","count":{"$sum":1}}}]`
	withLimit := strings.TrimSuffix(stages, "]") + `,{"$limit":` + strconv.Itoa(tools.AutoLimit) + `}]`
	resolve := func(c string) (parse.Schema, error) { return st.Schema(ctx, c) }
	p, err := query.ParsePipelineJSON(sch, resolve, json.RawMessage(withLimit))
	if err != nil {
		return nil, err
	}
	pd, _ := st.SQLShape()
	text, args = sqlcompile.CompilePipeline(pd, p, query.NoACLFilter)
	out[opGroup] = &spec{op: opGroup, tool: "aggregate",
		args: `{"class_name":"Ticket","pipeline":` + stages + `}`,
		sql:  text, sqlArgs: args,
		rest: "/aggregate/Ticket?" + url.Values{"pipeline": {`[{"$group":{"_id":"$status","count":{"$sum":1}}}]`}}.Encode()}

	// get: one objectId in the middle of the open tickets.
	var id string
	if err := st.Pool().QueryRow(ctx, `SELECT "objectId" FROM "Ticket" WHERE status = 'open' ORDER BY "objectId" OFFSET 500 LIMIT 1`).Scan(&id); err != nil {
		return nil, fmt.Errorf("pick an objectId: %w", err)
	}
	wid, err := query.ParseWhere(sch, map[string]any{"objectId": id})
	if err != nil {
		return nil, err
	}
	text, args, _ = st.FindSQL(sch, &query.Query{Class: class, Where: wid, Limit: 1, ReadACL: query.NoACLFilter})
	out[opGet] = &spec{op: opGet, tool: "get_object",
		args: `{"class_name":"Ticket","object_id":"` + id + `"}`,
		sql:  text, sqlArgs: args,
		rest: "/classes/Ticket/" + id}

	for _, s := range out {
		if s.literal, err = inline(s.sql, s.sqlArgs); err != nil {
			return nil, fmt.Errorf("%s: %w", s.op, err)
		}
	}
	return out, nil
}

// inline replaces $n parameters by SQL literals (strings and integers are
// all these statements take).
func inline(text string, args []any) (string, error) {
	for i := len(args); i >= 1; i-- {
		var lit string
		switch v := args[i-1].(type) {
		case string:
			lit = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case int:
			lit = strconv.Itoa(v)
		case int64:
			lit = strconv.FormatInt(v, 10)
		case []string:
			parts := make([]string, len(v))
			for j, s := range v {
				parts[j] = `"` + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`) + `"`
			}
			lit = "'{" + strings.ReplaceAll(strings.Join(parts, ","), "'", "''") + "}'"
		default:
			return "", fmt.Errorf("cannot inline argument $%d of type %T", i, v)
		}
		text = strings.ReplaceAll(text, "$"+strconv.Itoa(i), lit)
	}
	return text, nil
}

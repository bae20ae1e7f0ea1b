package main

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
)

// toolboxConfig is MCP Toolbox's tools file: one postgres source and one
// postgres-sql tool per operation.
func toolboxConfig(dbURL string, sp map[string]*spec) string {
	u, _ := url.Parse(dbURL)
	pass, _ := u.User.Password()
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sources:\n  bench-pg:\n    kind: postgres\n    host: %s\n    port: %s\n    database: %s\n    user: %s\n    password: %q\n",
		host, port, strings.TrimPrefix(u.Path, "/"), u.User.Username(), pass)
	b.WriteString("tools:\n")
	ops := make([]string, 0, len(sp))
	for op := range sp {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		fmt.Fprintf(&b, "  bench_%s:\n    kind: postgres-sql\n    source: bench-pg\n    description: the %s operation of parsemcp's peer benchmark\n    statement: %q\n", op, op, sp[op].literal)
	}
	return b.String()
}

package sqlite_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// Create a new embedded store, add a class and two objects, and read them
// back with a where-constraint. The store is raw: a query names the ACL it
// reads under (here none: query.NoACLFilter, as the master key would).
func ExampleCreate() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parsemcp-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Create(ctx, filepath.Join(dir, "app.sqlite"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	ticket := parse.NewSchema("Ticket")
	ticket.Fields["title"] = parse.Field{Type: parse.TypeString}
	ticket.Fields["priority"] = parse.Field{Type: parse.TypeNumber}
	if err := st.CreateClass(ctx, ticket); err != nil {
		log.Fatal(err)
	}
	if err := st.Create(ctx, "Ticket", []parse.Object{
		{"title": "Printer on fire", "priority": 1},
		{"title": "Coffee machine empty", "priority": 3},
	}); err != nil {
		log.Fatal(err)
	}

	where, err := query.ParseWhereJSON(ticket, `{"priority":{"$lte":2}}`)
	if err != nil {
		log.Fatal(err)
	}
	rows, err := st.Find(ctx, &query.Query{Class: "Ticket", Where: where, Limit: -1, ReadACL: query.NoACLFilter})
	if err != nil {
		log.Fatal(err)
	}
	all, err := st.Count(ctx, &query.Query{Class: "Ticket", ReadACL: query.NoACLFilter})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(rows), rows[0]["title"], "of", all)
	// Output: 1 Printer on fire of 2
}

package sqlite_test

import (
	"context"
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// Rows fetched from elsewhere are loaded into a scratch store of exactly
// their classes, and a pipeline runs over them.
func ExampleScratch() {
	ctx := context.Background()
	sch := parse.NewSchema("Ticket")
	sch.Fields["status"] = parse.Field{Type: parse.TypeString}
	scratch, err := sqlite.Scratch(ctx, []parse.Schema{sch})
	if err != nil {
		panic(err)
	}
	defer scratch.Close()
	classes, _ := scratch.Schemas(ctx)
	fmt.Println(len(classes), classes[0].ClassName) // no system class of its own
	if err := scratch.Create(ctx, "Ticket", []parse.Object{{"status": "open"}, {"status": "open"}, {"status": "closed"}}); err != nil {
		panic(err)
	}
	p, err := query.ParsePipelineJSON(sch, nil, []byte(`[{"$group": {"_id": "$status", "n": {"$sum": 1}}}]`))
	if err != nil {
		panic(err)
	}
	rows, err := scratch.Aggregate(ctx, "Ticket", p, query.NoACLFilter)
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Println(r["objectId"], r["n"])
	}
	// Output:
	// 1 Ticket
	// closed 1
	// open 2
}

package query_test

import (
	"fmt"
	"log"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The where language is Parse Server's: a JSON object of field
// constraints, checked against the class's schema as it is parsed. A
// parsed constraint can also be evaluated against an object in memory
// (query.Match), as the live subscriptions do.
func ExampleParseWhereJSON() {
	s := parse.NewSchema("Ticket")
	s.Fields["status"] = parse.Field{Type: parse.TypeString}
	s.Fields["priority"] = parse.Field{Type: parse.TypeNumber}

	where, err := query.ParseWhereJSON(s, `{"status":{"$in":["open","pending"]},"priority":{"$lt":3}}`)
	if err != nil {
		log.Fatal(err)
	}
	for _, obj := range []parse.Object{
		{"status": "open", "priority": 1},
		{"status": "closed", "priority": 1},
		{"status": "pending", "priority": 5},
	} {
		ok, err := query.Match(where, obj)
		fmt.Println(obj["status"], obj["priority"], ok, err)
	}

	// A field the class does not have, or an operator the language does
	// not know, is refused with an error naming it.
	_, err = query.ParseWhereJSON(s, `{"owner":"alice"}`)
	fmt.Println(err)
	_, err = query.ParseWhereJSON(s, `{"priority":{"$between":[1,2]}}`)
	fmt.Println(err)
	// Output:
	// open 1 true <nil>
	// closed 1 false <nil>
	// pending 5 false <nil>
	// where.owner: unknown field "owner" on class Ticket
	// where.priority.$between: unknown operator $between
}

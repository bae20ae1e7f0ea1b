package parserest_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/parserest"
)

// Open a running Parse Server as a store: the URL names the app and the
// server, the keys come from the environment (PARSEMCP_PARSE_MASTER_KEY).
func ExampleOpen() {
	cfg, err := parserest.ParseURL("parse+https://myapp@api.example.com/parse")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg.Redacted())
	if os.Getenv("PARSE_EXAMPLE_LIVE") == "" {
		return // no server to talk to here
	}
	st, err := parserest.Open(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	// A public-only ACL: Parse Server answers as an anonymous client.
	n, err := st.Count(context.Background(), &query.Query{Class: "Ticket", ReadACL: query.ACLEntries("*")})
	fmt.Println(n, err)
	// Output: parse+https://myapp@api.example.com/parse
}

package parse_test

import (
	"encoding/json"
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
)

// A CLP stored with only get and create leaves find master-key only, as
// Parse Server reads it; pointerFields restrict update to the rows that
// point at the caller.
func ExampleCLP_Decide() {
	var clp parse.CLP
	_ = json.Unmarshal([]byte(`{"get": {"*": true}, "create": {"*": true}, "update": {"pointerFields": ["owner"]}}`), &clp)
	alice := parse.Principal{UserID: "aliceId001", Entries: []string{"*", "aliceId001"}}

	fmt.Println("get:", clp.Decide(parse.OpGet, alice).Allowed)
	fmt.Println("find:", clp.Decide(parse.OpFind, alice).Allowed)
	d := clp.Decide(parse.OpUpdate, alice)
	fmt.Println("update:", d.Allowed, "on rows whose", d.UserFields, "is", d.User)
	fmt.Println("find, master key:", clp.Decide(parse.OpFind, parse.Principal{Master: true}).Allowed)
	// Output:
	// get: true
	// find: false
	// update: true on rows whose [owner] is aliceId001
	// find, master key: true
}

// A user's own _User row keeps the fields protectedFields hide from
// everyone else.
func ExampleProtectedFor() {
	users := parse.NewSchema(parse.ClassUser)
	bob := parse.Principal{UserID: "bobId00001", Entries: []string{"*", "bobId00001"}}
	fmt.Println(parse.ProtectedFor(users, bob))
	fmt.Println(parse.OwnerExempt(parse.ClassUser, "bobId00001", bob))
	// Output:
	// [email]
	// true
}

package query_test

import (
	"fmt"

	"github.com/parsemcp/parsemcp/query"
)

// The zero ACLFilter admits no row; NoACLFilter admits all; ACLEntries
// admits rows with no ACL and rows granting one of its entries.
func ExampleACLFilter() {
	var unset query.ACLFilter
	entries := query.ACLEntries("*", "role:Staff")
	fmt.Println(unset.Admits(nil), query.NoACLFilter.Admits([]string{}), entries.Admits(nil), entries.Admits([]string{"role:Staff"}), entries.Admits([]string{"u1"}))
	// Output: false true true true false
}

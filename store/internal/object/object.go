// Package object holds the small helpers the backends share for a
// parse.Object: its objectId, and a deep copy.
package object

import (
	"github.com/parsemcp/parsemcp/parse"
)

// ID returns obj's objectId ("" when it has none).
func ID(obj parse.Object) string {
	id, _ := obj[parse.FieldObjectID].(string)
	return id
}

// Clone deep-copies obj (nil stays nil): a backend hands watchers
// copies of the rows it also returns to its caller.
func Clone(obj parse.Object) parse.Object {
	if obj == nil {
		return nil
	}
	return parse.CloneJSON(map[string]any(obj)).(map[string]any)
}

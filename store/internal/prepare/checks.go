package prepare

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// The checks and the error every backend's Update, Delete and DeleteClass
// share.

// CheckWrite refuses a Write that names no object.
func CheckWrite(w store.Write) error {
	if w.ID == "" {
		return fmt.Errorf("%w: no objectId to write in class %s", store.ErrInvalid, w.Class)
	}
	return nil
}

// ObjectNotFound returns the error for an object that is missing or that w
// does not allow to change.
func ObjectNotFound(w store.Write) error {
	return fmt.Errorf("%w: %s %s (missing, or not writable under the given constraints)", store.ErrObjectNotFound, w.Class, w.ID)
}

// CheckDeleteClass refuses to drop a system class.
func CheckDeleteClass(class string) error {
	if parse.IsSystemClass(class) {
		return fmt.Errorf("%w: %s is a system class and cannot be deleted", store.ErrInvalid, class)
	}
	return nil
}

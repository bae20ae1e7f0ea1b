package query

import (
	"testing"

	"github.com/parsemcp/parsemcp/internal/shape/shapetest"
)

// The hand-written check accepts exactly what the regexp it replaced
// accepted.
func TestSubKeyCheckAgreesWithItsRegexp(t *testing.T) {
	shapetest.Agree(t, `^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$`, 128, validSubKey)
}

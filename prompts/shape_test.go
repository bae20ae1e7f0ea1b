package prompts

import (
	"testing"

	"github.com/parsemcp/parsemcp/internal/shape/shapetest"
)

// The hand-written check accepts exactly what the regexp it replaced
// accepted.
func TestNameCheckAgreesWithItsRegexp(t *testing.T) {
	shapetest.Agree(t, `^[a-z][a-z0-9_]{0,63}$`, 64, validName)
}

package tools

import (
	"testing"

	"github.com/parsemcp/parsemcp/internal/shape/shapetest"
)

// The hand-written check accepts exactly what the regexp it replaced
// accepted.
func TestToolNameCheckAgreesWithItsRegexp(t *testing.T) {
	shapetest.Agree(t, `^[a-z][a-z0-9_]{0,63}$`, 64, validToolName)
}

package federation

import (
	"testing"

	"github.com/parsemcp/parsemcp/internal/shape/shapetest"
)

// The hand-written checks accept exactly what the regexps they replaced
// accepted.
func TestChecksAgreeWithTheirRegexps(t *testing.T) {
	shapetest.Agree(t, `^[\pL\pN _.@:-]{1,100}$`, 100, validTokenName)
	shapetest.Agree(t, `^[A-Za-z0-9]{10}$`, 10, validTokenID)
	shapetest.Agree(t, `^[A-Za-z0-9_.\-/]{1,128}$`, 128, validRemoteToolName)
	shapetest.Agree(t, `^[A-Za-z0-9_-]{1,64}$`, 64, validCorrID)
	shapetest.Agree(t, `^[A-Za-z0-9_-]{1,64}$`, 64, validLiteral)
	shapetest.Agree(t, `^[A-Za-z0-9_]{1,32}$`, 32, func(s string) bool { return Entity{Type: s, ID: "x"}.Validate() == nil })
	shapetest.Agree(t, `^[A-Za-z0-9_-]{1,64}$`, 64, func(s string) bool { return Entity{Type: "x", ID: s}.Validate() == nil })
}

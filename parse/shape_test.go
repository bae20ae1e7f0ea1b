package parse

import (
	"testing"

	"github.com/parsemcp/parsemcp/internal/shape/shapetest"
)

// The hand-written checks accept exactly what the regexps they replaced
// accepted (a system class is accepted by name, besides the regexp).
func TestNameChecksAgreeWithTheirRegexps(t *testing.T) {
	shapetest.Agree(t, `^[A-Za-z][A-Za-z0-9_]{0,119}$`, 120, func(s string) bool { return ValidClassName(s) != systemClasses[s] })
	shapetest.Agree(t, `^[A-Za-z][A-Za-z0-9_]{0,127}$`, 128, ValidFieldName)
	shapetest.Agree(t, `^[A-Za-z0-9]{1,64}$`, 64, ValidObjectID)
}

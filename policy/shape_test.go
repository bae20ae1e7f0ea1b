package policy

import (
	"testing"

	"github.com/parsemcp/parsemcp/internal/shape/shapetest"
)

// The hand-written checks accept exactly what the regexps they replaced
// accepted.
func TestChecksAgreeWithTheirRegexps(t *testing.T) {
	shapetest.Agree(t, `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`, 64, validProfileName)
	shapetest.Agree(t, `^[A-Za-z][A-Za-z0-9_]{0,63}$`, 64, validMethodName)
	shapetest.Agree(t, `^[A-Za-z0-9_\- ]{1,128}$`, 128, validRoleName)
	shapetest.Agree(t, `^[A-Za-z_][A-Za-z0-9_]{0,127}$`, 128, validEnvName)
	shapetest.Agree(t, `^[0-9a-fA-F]{64}$`, 64, validHexDigest)
}

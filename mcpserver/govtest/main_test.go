// Package govtest is the governance attack table: every case is one MCP
// request a real SDK client makes against a server whose agents come from
// a policy file, on the demo dataset, on SQLite and on PostgreSQL. The
// expected rows and counts are computed from the raw store (not through
// the governed scope); refusals are checked by exact error code and
// message.
package govtest

import (
	"os"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

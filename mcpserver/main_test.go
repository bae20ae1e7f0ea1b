package mcpserver_test

import (
	"os"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
)

// TestMain gives the PostgreSQL tests (cancellation reaching the
// database) a database of their own; without PostgreSQL they skip, except
// in CI.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

package agent_test

import (
	"os"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

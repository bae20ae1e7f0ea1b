package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/parsemcp/parsemcp/agent"
)

func sha256hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

func recalc(ctx context.Context, call *agent.MethodCall) (any, error) { return nil, nil }

func testOptions() Options {
	return Options{
		Name:       "p.yaml",
		Funcs:      map[string]agent.MethodFunc{"recalc": recalc},
		KnownTools: []string{"query_class", "count_objects", "export_data"},
		LookupEnv:  func(string) (string, bool) { return "", false },
	}
}

// ptr is a pointer to v.
func ptr[T any](v T) *T { return &v }

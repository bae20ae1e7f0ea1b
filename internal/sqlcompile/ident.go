package sqlcompile

import (
	"strings"
	"sync"
	"sync/atomic"
)

// QuoteIdent quotes an identifier as both SQL backends do: in double
// quotes, a double quote inside doubled. Every statement quotes the same
// few class and column names again, so the quoted forms are kept: up to
// identCacheMax names of at most identCacheLen bytes, in a map that is
// read without a lock and copied when a name is added.
func QuoteIdent(name string) string {
	if q, ok := (*quoted.Load())[name]; ok {
		return q
	}
	q := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	if len(name) <= identCacheLen {
		remember(name, q)
	}
	return q
}

const (
	identCacheMax = 1024
	identCacheLen = 128
)

var (
	quoted   atomic.Pointer[map[string]string]
	quotedMu sync.Mutex
)

func init() { quoted.Store(&map[string]string{}) }

func remember(name, q string) {
	quotedMu.Lock()
	defer quotedMu.Unlock()
	old := *quoted.Load()
	if _, ok := old[name]; ok || len(old) >= identCacheMax {
		return
	}
	m := make(map[string]string, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[name] = q
	quoted.Store(&m)
}

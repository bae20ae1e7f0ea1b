// Package democache keeps the demo dataset of each size as a SQLite file
// in the OS cache directory (<cache>/parsemcp/demo-<demo.Version>-<rows>.sqlite),
// shared by `parsemcp serve --demo` and the benchmarks: generated once,
// into a temporary file renamed into place, then reused.
package democache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// Dataset is the cached file of one size.
type Dataset struct {
	Path string
	// Generated is nil when the file was there already, else what
	// demo.Generate wrote into it.
	Generated *demo.Stats
}

// SQLite returns the cached demo dataset of rows objects, generating it
// when absent; creating, when not nil, is told the path first (the
// generation of a large dataset takes a while).
func SQLite(ctx context.Context, rows int, creating func(path string)) (Dataset, error) {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "parsemcp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Dataset{}, err
	}
	path := filepath.Join(dir, fmt.Sprintf("demo-%s-%d.sqlite", demo.Version, rows))
	if _, err := os.Stat(path); err == nil {
		return Dataset{Path: path}, nil
	}
	tmp, err := os.CreateTemp(dir, "demo-*.sqlite.tmp")
	if err != nil {
		return Dataset{}, err
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer func() {
		for _, p := range []string{tmpPath, tmpPath + "-wal", tmpPath + "-shm"} {
			os.Remove(p)
		}
	}()
	if creating != nil {
		creating(path)
	}
	st, err := sqlite.Create(ctx, tmpPath)
	if err != nil {
		return Dataset{}, err
	}
	stats, err := demo.Generate(ctx, st, demo.Options{Rows: rows})
	if err != nil {
		st.Close()
		return Dataset{}, fmt.Errorf("demo data: %w", err)
	}
	if err := st.Close(); err != nil {
		return Dataset{}, err
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return Dataset{}, err
	}
	return Dataset{Path: path, Generated: &stats}, nil
}

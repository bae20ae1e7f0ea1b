package main

import (
	"context"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// HeapProfileEnv names a file that receives the process's heap profile
// (pprof format, `go tool pprof FILE`) each time the heap reaches a new
// high, so the file holds the profile of the peak: the measurement behind
// docs/PERFORMANCE.md's heap under load. Unset: nothing runs.
const HeapProfileEnv = "PARSEMCP_HEAP_PROFILE"

// profileHeapPeaks writes path's profile whenever the live heap objects
// exceed the last written high by a sixteenth, checked every 100 ms, until
// ctx ends.
func profileHeapPeaks(ctx context.Context, path string) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var high uint64
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > high+high/16 {
			if writeHeapProfile(path) == nil {
				high = v
			}
		}
	}
}

func writeHeapProfile(path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

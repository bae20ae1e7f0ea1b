//go:build unix

package bench

import (
	"syscall"
	"time"
)

// SelfCPUTime is this process's user and system CPU time (getrusage), at
// the kernel's full resolution, where CPUTime of the own pid counts in
// clock ticks.
func SelfCPUTime() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

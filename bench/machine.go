package bench

import (
	"os"
	"strings"
)

// LoadAverage is the 1, 5 and 15 minute load average, or "?": the figure
// every recorded run quotes, before and after.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

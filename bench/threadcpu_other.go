//go:build !linux

package bench

import "time"

// threadCPU is unavailable here: preparation is reported in wall time only.
func threadCPU() (time.Duration, bool) { return 0, false }

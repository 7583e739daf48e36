//go:build !linux

package bench

import "time"

// threadCPU is unavailable here: preparation is reported in wall time only.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPUPrecise is getrusage's process CPU time here.
func processCPUPrecise() time.Duration { return processCPU() }

// childCPU is unavailable here: a child's CPU time is known once it exited.
func childCPU(int) (time.Duration, bool) { return 0, false }

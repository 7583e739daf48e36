package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the calling OS thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and true; the
// caller holds runtime.LockOSThread. On a shared machine it measures the work done, without the
// time spent waiting for a core.
func threadCPU() (time.Duration, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

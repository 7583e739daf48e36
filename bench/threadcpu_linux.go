package bench

import (
	"bytes"
	"os"
	"strconv"
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

// processCPUPrecise returns the CPU time of every thread of this process
// (CLOCK_PROCESS_CPUTIME_ID: the scheduler's nanosecond accounting, where getrusage splits it by
// ticks).
func processCPUPrecise() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return processCPU()
	}
	return time.Duration(ts.Nano())
}

// childCPU returns a running child's user plus system CPU time from /proc/PID/stat (utime and
// stime, in the kernel's USER_HZ ticks of 10 ms) and true, or false when unreadable.
func childCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces: the fields after it start past its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 { // state is f[0]; utime and stime are fields 14 and 15 of the line
		return 0, false
	}
	u, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	s, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * 10 * time.Millisecond, true
}

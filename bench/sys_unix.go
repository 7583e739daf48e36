//go:build unix

package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// processCPU returns this process's user plus system CPU time (getrusage RUSAGE_SELF).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS makes the next peakRSSMB report the peak from now on: on Linux, writing 5 to
// /proc/self/clear_refs resets the high-water mark (VmHWM). It reports whether it could.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// rssMB returns the current resident set size in MiB (VmRSS on Linux; 0 elsewhere).
func rssMB() float64 { return statusMB("VmRSS:") }

// statusMB returns a /proc/self/status field given in kB, in MiB, or 0.
func statusMB(field string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(field)); ok {
			if f := bytes.Fields(v); len(f) > 0 {
				if kb, err := strconv.ParseFloat(string(f[0]), 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

// peakRSSMB returns the peak resident set size in MiB: VmHWM on Linux (since the last reset),
// else getrusage's ru_maxrss (since the process started).
func peakRSSMB() float64 {
	if mb := statusMB("VmHWM:"); mb > 0 {
		return mb
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return float64(ru.Maxrss) / (1 << 20) // bytes on macOS
	}
	return float64(ru.Maxrss) / 1024 // KiB elsewhere
}

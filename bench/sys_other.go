//go:build !unix

package bench

import "time"

func processCPU() time.Duration { return 0 }

func resetPeakRSS() bool { return false }

func peakRSSMB() float64 { return 0 }

func rssMB() float64 { return 0 }

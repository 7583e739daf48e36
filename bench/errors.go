package bench

import "errors"

// ErrBadOptions reports an out-of-range workload or option; fix the flags and run again.
var ErrBadOptions = errors.New("bench: bad options")

// ErrTurnFailed reports that a workload turn did not complete; the run's numbers would not be
// comparable across modes, so the run stops. The wrapped error says which turn and why.
var ErrTurnFailed = errors.New("bench: turn failed")

// ErrSimUnavailable reports that the simulator could not be started or did not become healthy.
var ErrSimUnavailable = errors.New("bench: simulator unavailable")

package family

import "errors"

// ErrUnknown means no family is registered for a profile's parser names: fix the configuration
// (the error lists the supported names).
var ErrUnknown = errors.New("unknown model family")

package configs

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// validateLimits checks the hardening settings (issue 14).
func (c *Config) validateLimits() []error {
	var errs []error
	if c.Server.MaxJSONDepth < 1 {
		errs = append(errs, errors.New("max-json-depth: must be at least 1"))
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"max-concurrent-responses", c.Server.MaxConcurrentResponses}, {"max-inflight-body-mb", c.Server.MaxInflightBodyMB}, {"memory-limit-mb", c.Server.MemoryLimitMB}} {
		if v.n < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative", v.name))
		}
	}
	if c.Server.MaxInflightBodyMB > 0 && int64(c.Server.MaxInflightBodyMB)<<20 < c.Server.MaxBodyBytes {
		errs = append(errs, fmt.Errorf("max-inflight-body-mb: %d MiB is less than one body of max-body-bytes (%d)", c.Server.MaxInflightBodyMB, c.Server.MaxBodyBytes))
	}
	for _, v := range []struct {
		name string
		neg  bool
	}{{"body-read-timeout", c.Server.BodyReadTimeout < 0}, {"write-timeout", c.Server.WriteTimeout < 0},
		{"upstream-timeout", c.Upstream.Timeout < 0}, {"upstream-idle-timeout", c.Upstream.IdleTimeout < 0}} {
		if v.neg {
			errs = append(errs, fmt.Errorf("%s: must not be negative (0 disables it)", v.name))
		}
	}
	return errs
}

// CheckCacheSalt reports whether vLLM accepts salt as a cache_salt: 1 to 128 characters, none of
// '@', '/', '\' or NUL (vLLM rejects such a salt with 400 on every request).
func CheckCacheSalt(salt string) error {
	n := utf8.RuneCountInString(salt)
	if n < 1 || n > 128 {
		return fmt.Errorf("%d characters; vLLM accepts 1 to 128", n)
	}
	if i := strings.IndexAny(salt, "@/\\\x00"); i >= 0 {
		return fmt.Errorf("%q at byte %d: vLLM forbids '@', '/', '\\' and NUL", salt[i], i)
	}
	return nil
}

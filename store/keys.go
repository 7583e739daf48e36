package store

import (
	"fmt"
	"strings"
)

// Key limits. Tenants come from the API key mapping and ids from this server or
// from clients (input item ids), so both are bounded and checked before they
// become part of a key.
const (
	// MaxTenantLen is the longest tenant accepted, in bytes.
	MaxTenantLen = 128
	// MaxIDLen is the longest response or item id accepted, in bytes.
	MaxIDLen = 256
)

// validTenant reports whether tenant can be embedded in every key layout of the
// package: bolt keys are tenant+"\x00"+id, so NUL is reserved; Redis keys are
// prefix+":{"+tenant+"}:…", so braces are reserved (a brace would end the
// cluster hash tag early and make two (tenant, id) pairs map to one key).
func validTenant(tenant string) bool {
	return tenant != "" && len(tenant) <= MaxTenantLen && !strings.ContainsAny(tenant, "\x00{}")
}

// validID reports whether id is usable as a response or item id. The tenant
// checks above already make every key unambiguous; ids only need to be
// non-empty, bounded and free of NUL (kept out for log and tool safety).
func validID(id string) bool {
	return id != "" && len(id) <= MaxIDLen && !strings.Contains(id, "\x00")
}

// maxStoredIDLen bounds ids read back: a diverted item id is the item's id
// plus "~" and 16 hex digits (see divertedID).
const maxStoredIDLen = MaxIDLen + 17

// validStoredID is validID for ids a store may have written itself.
func validStoredID(id string) bool {
	return id != "" && len(id) <= maxStoredIDLen && !strings.Contains(id, "\x00")
}

func checkKey(tenant, id string) error {
	if !validTenant(tenant) {
		return fmt.Errorf("tenant %q: %w", truncate(tenant), ErrInvalidKey)
	}
	if !validID(id) {
		return fmt.Errorf("id %q: %w", truncate(id), ErrInvalidKey)
	}
	return nil
}

// localKey is the key used by the embedded and in-process stores.
func localKey(tenant, id string) string {
	return tenant + "\x00" + id
}

func truncate(s string) string {
	const n = 64
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

package middleware

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// DevTenant is the single tenant of dev mode (no API keys configured).
const DevTenant = "default"

// Authenticator maps a bearer key to a tenant.
type Authenticator interface {
	// Tenant returns the key's tenant and whether the key is known.
	Tenant(key string) (string, bool)
}

// DevAuth accepts every request (with or without a key) as DevTenant.
type DevAuth struct{}

// Tenant implements Authenticator.
func (DevAuth) Tenant(string) (string, bool) { return DevTenant, true }

// Auth authenticates each request with a and stores the tenant in the context; a missing or unknown
// key gets 401 in OpenAI's error shape. Keys come from "Authorization: Bearer <key>" (or api-key).
func Auth(a Authenticator) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := bearer(r)
			tenant, ok := a.Tenant(key)
			if !ok {
				msg := "Incorrect API key provided."
				if key == "" {
					msg = "You didn't provide an API key. Provide it in the Authorization header as Bearer <key>."
				}
				WriteError(w, http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key", msg)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithTenant(r.Context(), tenant)))
		})
	}
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(h, "Bearer "); ok {
		return strings.TrimSpace(k)
	}
	return r.Header.Get("api-key")
}

// keyEntry is one line of the --api-keys file.
type keyEntry struct {
	Tenant    string `json:"tenant"`
	KeySHA256 string `json:"key_sha256"`
}

// FileAuth authenticates against a JSON file [{"tenant","key_sha256"}], re-read when its modification
// time or size changes (checked at most once per second). It is safe for concurrent use.
type FileAuth struct {
	path   string
	logger *slog.Logger

	mu      sync.Mutex
	keys    map[[32]byte]string
	modTime time.Time
	size    int64
	checked time.Time
	now     func() time.Time
}

// NewFileAuth loads path; a missing or malformed file is an error at start.
func NewFileAuth(path string, logger *slog.Logger) (*FileAuth, error) {
	a := &FileAuth{path: path, logger: logger, now: time.Now}
	if err := a.reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Tenant implements Authenticator. Digests are compared in constant time.
func (a *FileAuth) Tenant(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if now := a.now(); now.Sub(a.checked) >= time.Second {
		a.checked = now
		if fi, err := os.Stat(a.path); err == nil && (!fi.ModTime().Equal(a.modTime) || fi.Size() != a.size) {
			if err := a.reloadLocked(); err != nil {
				// Keep serving with the previous keys: a half-written file must not lock everyone out.
				a.logger.Error("reload api keys", "path", a.path, "err", err)
			}
		}
	}
	sum := sha256.Sum256([]byte(key))
	for d, tenant := range a.keys {
		if subtle.ConstantTimeCompare(d[:], sum[:]) == 1 {
			return tenant, true
		}
	}
	return "", false
}

func (a *FileAuth) reload() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reloadLocked()
}

func (a *FileAuth) reloadLocked() error {
	fi, err := os.Stat(a.path)
	if err != nil {
		return fmt.Errorf("api keys: %w", err)
	}
	data, err := os.ReadFile(a.path)
	if err != nil {
		return fmt.Errorf("api keys: %w", err)
	}
	var entries []keyEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return fmt.Errorf("api keys %s: %w", a.path, err)
	}
	keys := make(map[[32]byte]string, len(entries))
	var errs []error
	for i, e := range entries {
		raw, err := hex.DecodeString(e.KeySHA256)
		if err != nil || len(raw) != 32 {
			errs = append(errs, fmt.Errorf("entry %d: key_sha256 is not 64 hex digits", i))
			continue
		}
		if e.Tenant == "" {
			errs = append(errs, fmt.Errorf("entry %d: empty tenant", i))
			continue
		}
		keys[[32]byte(raw)] = e.Tenant
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("api keys %s: %w", a.path, err)
	}
	a.keys, a.modTime, a.size = keys, fi.ModTime(), fi.Size()
	return nil
}

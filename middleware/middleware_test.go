package middleware

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func keysFile(t *testing.T, path string, entries map[string]string) {
	t.Helper()
	s := "["
	first := true
	for key, tenant := range entries {
		sum := sha256.Sum256([]byte(key))
		if !first {
			s += ","
		}
		first = false
		s += `{"tenant":"` + tenant + `","key_sha256":"` + hex.EncodeToString(sum[:]) + `"}`
	}
	if err := os.WriteFile(path, []byte(s+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.json")
	keysFile(t, path, map[string]string{"sk-acme": "acme", "sk-globex": "globex"})
	fa, err := NewFileAuth(path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h := Auth(fa)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, Tenant(r.Context())) }))
	tests := []struct {
		name, header string
		status       int
		body         string
	}{
		{"acme", "Bearer sk-acme", 200, "acme"},
		{"globex", "Bearer sk-globex", 200, "globex"},
		{"unknown", "Bearer sk-nope", 401, ""},
		{"missing", "", 401, ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/responses/x", nil)
		if tt.header != "" {
			req.Header.Set("Authorization", tt.header)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, rec.Code, tt.status)
		}
		if tt.status == 200 && rec.Body.String() != tt.body {
			t.Errorf("%s: tenant %q, want %q", tt.name, rec.Body.String(), tt.body)
		}
		if tt.status == 401 {
			b := rec.Body.Bytes()
			if gjson.GetBytes(b, "error.type").String() != "invalid_request_error" || gjson.GetBytes(b, "error.code").String() != "invalid_api_key" {
				t.Errorf("%s: body %s not in OpenAI's error shape", tt.name, b)
			}
		}
	}

	// Rotating the file takes effect without a restart.
	keysFile(t, path, map[string]string{"sk-new": "acme"})
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	fa.mu.Lock()
	fa.now = func() time.Time { return future.Add(time.Minute) }
	fa.mu.Unlock()
	if _, ok := fa.Tenant("sk-acme"); ok {
		t.Error("old key still accepted after reload")
	}
	if tenant, ok := fa.Tenant("sk-new"); !ok || tenant != "acme" {
		t.Errorf("new key: %q %v", tenant, ok)
	}
}

func TestRecoverWritesOpenAIError(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := RequestIDs(logger)(Recover(logger)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/responses", nil))
	if rec.Code != 500 || gjson.Get(rec.Body.String(), "error.type").String() != "server_error" {
		t.Errorf("got %d %s", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
}

// deadlineRecorder is a ResponseWriter with write deadlines (as net/http's own), recording them.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	set []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.set = append(d.set, t)
	return nil
}

// TestWriteDeadlinesRenewLazily: a stream's many writes move the deadline once, not once each
// (it is moved again only after an eighth of the timeout), every write having at least 7/8 of it
// left; the handler's return moves it once more for net/http's final flush.
func TestWriteDeadlinesRenewLazily(t *testing.T) {
	const timeout = time.Hour // no write here comes an eighth of it after the first
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	var during int
	h := WriteDeadlines(timeout)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		for range 1000 {
			start := time.Now()
			if _, err := w.Write([]byte("data: x\n\n")); err != nil {
				t.Fatal(err)
			}
			if err := rc.Flush(); err != nil {
				t.Fatal(err)
			}
			if left := rec.set[len(rec.set)-1].Sub(start); left < timeout-timeout/8 {
				t.Fatalf("a write had %v left of %v", left, timeout)
			}
		}
		during = len(rec.set)
	}))
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if during != 1 || len(rec.set) != 2 {
		t.Fatalf("deadline moved %d times for 2,000 writes and flushes, %d in all; want 1 and 2", during, len(rec.set))
	}
}

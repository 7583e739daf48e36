package stack

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/upstream/vllmgrpc"
)

// A gRPC upstream refuses at startup what GenerateRequest cannot carry: several tenants (their
// cache salts), a pinned salt, an upstream key.
func TestGRPCConfigCheck(t *testing.T) {
	dir := t.TempDir()
	keys := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const d1 = "1111111111111111111111111111111111111111111111111111111111111111"
	const d2 = "2222222222222222222222222222222222222222222222222222222222222222"
	one := keys("one.json", `[{"tenant":"acme","key_sha256":"`+d1+`"},{"tenant":"acme","key_sha256":"`+d2+`"}]`)
	two := keys("two.json", `[{"tenant":"acme","key_sha256":"`+d1+`"},{"tenant":"globex","key_sha256":"`+d2+`"}]`)
	tests := []struct {
		name       string
		edit       func(c *configs.Config)
		wantTenant string
		wantErr    error
		wantText   string
	}{
		{"dev mode", func(*configs.Config) {}, middleware.DevTenant, nil, ""},
		{"one tenant, two keys", func(c *configs.Config) { c.Auth.APIKeysFile = one }, "acme", nil, ""},
		{"two tenants", func(c *configs.Config) { c.Auth.APIKeysFile = two }, "", vllmgrpc.ErrCacheSaltUnsupported, "2 tenants"},
		{"pinned salt", func(c *configs.Config) { c.Models[0].CacheSalt = "x" }, "", vllmgrpc.ErrCacheSaltUnsupported, "pin a cache_salt"},
		{"upstream key", func(c *configs.Config) { c.Upstream.APIKey = "k" }, "", nil, "--upstream-api-key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := configs.Default()
			cfg.Upstream.URL = "grpc://127.0.0.1:1"
			cfg.Models = []configs.ModelProfile{{Name: "qwen3"}}
			tt.edit(cfg)
			tenant, err := grpcConfigCheck(cfg)
			if tt.wantText == "" {
				if err != nil || tenant != tt.wantTenant {
					t.Fatalf("grpcConfigCheck = %q, %v; want %q, nil", tenant, err, tt.wantTenant)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantText) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("grpcConfigCheck err = %v, want one with %q (%v)", err, tt.wantText, tt.wantErr)
			}
		})
	}
}

package store

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
)

// LoadSealKeys reads a seal-keys file: a JSON list [{"id":"k1","secret":"<base64>"}]; the first
// signs, all verify (NewSealer). Without a path it makes one random key: artifacts and cache salts
// then do not survive a restart or cross pods, which is only right for a single dev process.
func LoadSealKeys(path string) ([]SealKey, error) {
	if path == "" {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return nil, fmt.Errorf("seal key: %w", err)
		}
		return []SealKey{{ID: "ephemeral", Secret: secret}}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seal keys: %w", err)
	}
	var entries []struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("seal keys %s: %w", path, err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("seal keys %s: empty list", path)
	}
	keys := make([]SealKey, 0, len(entries))
	for i, e := range entries {
		secret, err := base64.StdEncoding.DecodeString(e.Secret)
		if err != nil {
			return nil, fmt.Errorf("seal keys %s: entry %d: secret is not base64", path, i)
		}
		keys = append(keys, SealKey{ID: e.ID, Secret: secret})
	}
	return keys, nil
}

package server

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/store"
)

// Reseeder carries a response's identity through stateless clients (Codex CLI: store:false, the full
// history replayed every turn, include:["reasoning.encrypted_content"]). The reasoning item stitch
// returns gets an encrypted_content blob: sealed (HMAC) and encrypted (AES-GCM), bound to the tenant,
// expiring, naming the response and the reasoning item. When the client replays that item, any pod
// can open the blob and resolve the response's token artifact (L1, or L2 through Redis) although no
// checkpoint exists. No token ids are in the blob; a wrong, foreign or expired blob is ignored and
// the turn is a full render.
type Reseeder struct {
	Sealer *store.Sealer
	// TTL bounds a blob's life; after it the artifact is gone anyway. Default 1h.
	TTL time.Duration
	Now func() time.Time
}

const reseedPurpose = "reseed"

// seal returns the encrypted_content for reasoning item itemID of response responseID.
func (r *Reseeder) seal(tenant, responseID, itemID string) string {
	ttl, now := r.TTL, r.Now
	if ttl <= 0 {
		ttl = time.Hour
	}
	if now == nil {
		now = time.Now
	}
	b, err := r.Sealer.SealPrivate(tenant, reseedPurpose, []byte(responseID+"\x00"+itemID), now().Add(ttl))
	if err != nil {
		return ""
	}
	return "stitch1:" + base64.RawURLEncoding.EncodeToString(b)
}

// open returns the response id sealed in blob when it is valid for tenant and was made for itemID.
func (r *Reseeder) open(tenant, itemID, blob string) (string, bool) {
	raw, ok := strings.CutPrefix(blob, "stitch1:")
	if !ok {
		return "", false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return "", false
	}
	payload, _, err := r.Sealer.Open(tenant, reseedPurpose, sealed)
	if err != nil {
		return "", false
	}
	rid, item, ok := strings.Cut(string(payload), "\x00")
	if !ok || item != itemID {
		return "", false
	}
	return rid, true
}

// replayedResponse finds, from the end of a replayed history, the newest reasoning item whose
// encrypted_content opens for this tenant and names that very item; it returns that response's id.
func (r *Reseeder) replayedResponse(tenant string, items []json.RawMessage) string {
	for i := len(items) - 1; i >= 0; i-- {
		it := gjson.ParseBytes(items[i])
		if it.Get("type").Str != "reasoning" {
			continue
		}
		blob := it.Get("encrypted_content")
		if blob.Type != gjson.String {
			continue
		}
		if rid, ok := r.open(tenant, it.Get("id").Str, blob.Str); ok {
			return rid
		}
	}
	return ""
}

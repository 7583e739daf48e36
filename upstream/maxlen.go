package upstream

import (
	"context"
	"time"
)

// MaxModelLens asks /v1/models for each served model's context length (max_model_len), retrying
// until wait has passed (vLLM may still be loading). It returns what it learned, and the last
// error when the upstream never answered. Models vLLM does not report a length for are absent.
func (c *Client) MaxModelLens(ctx context.Context, wait time.Duration) (map[string]int, error) {
	out := map[string]int{}
	deadline := time.Now().Add(wait)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		models, err := c.Models(cctx)
		cancel()
		if err == nil {
			for _, m := range models {
				if m.MaxModelLen > 0 {
					out[m.ID] = m.MaxModelLen
				}
			}
			return out, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

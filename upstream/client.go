package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonlimit"
)

// Options configure a Client. The zero value of each field is usable except BaseURL.
type Options struct {
	// BaseURL is vLLM's address without the /v1 suffix, e.g. "http://127.0.0.1:8000".
	BaseURL string
	// HTTPClient defaults to a client without an overall timeout (streams may run for minutes);
	// cancellation comes from the request context.
	HTTPClient *http.Client
	// APIKey, when set, is sent as a Bearer token (vLLM --api-key) on every request, the
	// pass-through proxy's included (it uses HTTPClient's transport).
	APIKey string
	// FirstByteTimeout bounds the wait for a generation's first byte (headers and the first
	// chunk: vLLM sends nothing before the first token). 0: no bound.
	FirstByteTimeout time.Duration
	// IdleTimeout bounds the gap between two bytes of a generation's stream. 0: no bound.
	IdleTimeout time.Duration
}

// Client talks to one vLLM server. It is safe for concurrent use.
type Client struct {
	base  string
	http  *http.Client
	watch Watchdog
}

// New returns a Client for opts.BaseURL.
func New(opts Options) *Client {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if opts.APIKey != "" {
		base := hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		wrapped := *hc
		wrapped.Transport = &bearerTransport{base: base, header: "Bearer " + opts.APIKey}
		hc = &wrapped
	}
	return &Client{base: strings.TrimRight(opts.BaseURL, "/"), http: hc, watch: Watchdog{FirstByte: opts.FirstByteTimeout, Idle: opts.IdleTimeout}}
}

// bearerTransport sets the upstream's Authorization on every request it sends, so no caller (the
// pass-through proxy included) can forget it or forward a client's.
type bearerTransport struct {
	base   http.RoundTripper
	header string
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Set("Authorization", t.header)
	return t.base.RoundTrip(out)
}

// BaseURL returns the upstream's base address.
func (c *Client) BaseURL() string { return c.base }

// HTTPClient returns the underlying client, for pass-through proxying. Its transport sends the
// upstream API key.
func (c *Client) HTTPClient() *http.Client { return c.http }

// Completions posts body (an encoded CompletionRequest, in parts as CompletionRequest.Parts
// returns them) to /v1/completions and returns the response
// body on a 2xx answer; the caller closes it. Cancelling ctx aborts the request, which makes vLLM free
// the sequence's KV cache.
//
// The first-byte and idle timeouts apply: a Read of the body (or Completions itself) then fails
// with an error wrapping ErrTimeout.
func (c *Client) Completions(ctx context.Context, body [][]byte) (io.ReadCloser, error) {
	return c.withTimeouts(ctx, func(ctx context.Context) (*http.Response, error) {
		return c.do(ctx, http.MethodPost, "/v1/completions", body...)
	})
}

// ModelInfo is one entry of GET /v1/models.
type ModelInfo struct {
	ID          string
	MaxModelLen int // 0 when vLLM does not report it
}

// Models lists the served models.
func (c *Client) Models(ctx context.Context) ([]ModelInfo, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/models")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("read models: %w", err)
	}
	if err := jsonlimit.CheckDepth(data, jsonlimit.DefaultMaxDepth); err != nil {
		return nil, fmt.Errorf("read models: %w", err)
	}
	var out []ModelInfo
	for _, m := range gjson.GetBytes(data, "data").Array() {
		out = append(out, ModelInfo{ID: m.Get("id").String(), MaxModelLen: int(m.Get("max_model_len").Int())})
	}
	return out, nil
}

// Health reports nil when GET /health answers 2xx.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/health")
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.Body.Close()
}

// do sends a request whose body is the concatenation of body's parts (none: no body).
func (c *Client) do(ctx context.Context, method, path string, body ...[]byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if len(body) > 0 {
		// The parts are sent as they are; a long prompt's encoding is not copied into one buffer.
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(partsReader(body)), nil }
		req.Body, _ = req.GetBody()
		for _, p := range body {
			req.ContentLength += int64(len(p))
		}
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, ctxErr)
		}
		return nil, fmt.Errorf("%s %s: %w: %w", method, path, ErrUnreachable, err)
	}
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return nil, &StatusError{Status: resp.StatusCode, Body: data}
	}
	return resp, nil
}

func partsReader(parts [][]byte) io.Reader {
	rs := make([]io.Reader, len(parts))
	for i, p := range parts {
		rs[i] = bytes.NewReader(p)
	}
	return io.MultiReader(rs...)
}

package vllmgrpc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/upstream"
	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// Scheme is the --upstream prefix that selects this client: grpc://host:port.
const Scheme = "grpc://"

// abortTimeout bounds the Abort call sent after a request's context has ended.
const abortTimeout = 5 * time.Second

// maxMessageBytes is the largest message either side accepts. A 1M-token prompt is about 4 MB of
// varints; gRPC's 4 MiB default receive limit would refuse it.
const maxMessageBytes = 64 << 20

// Options configure a Client.
type Options struct {
	// Target is the engine's address: "host:port", or "grpc://host:port".
	Target string
	// DialOptions are added after the defaults (plaintext, 64 MiB messages).
	DialOptions []grpc.DialOption
	// NewRequestID makes a request id; default: "stitch-" and 16 random bytes in hex. Ids must be
	// unique among the engine's running requests, since Abort names them.
	NewRequestID func() string
	// FirstByteTimeout and IdleTimeout bound a generation as on the HTTP client (upstream.Options):
	// the wait for its first message, and the gap between two messages. 0: no bound.
	FirstByteTimeout, IdleTimeout time.Duration
	// AcceptSalt, when set, is asked about each request that carries a cache_salt: nil lets the
	// request go without it (the caller vouches that one tenant alone uses this engine, so there
	// is no prefix cache to keep apart), an error refuses it. Nil: every salted request is
	// refused with ErrCacheSaltUnsupported.
	AcceptSalt func(ctx context.Context, salt string) error
}

// Client talks to one vLLM gRPC engine. It is safe for concurrent use; Close releases it.
type Client struct {
	target string
	conn   *grpc.ClientConn
	engine pb.VllmEngineClient
	newID  func() string
	salt   func(ctx context.Context, salt string) error
	watch  upstream.Watchdog
	// topP is the engine's default top_p (generation_config, from GetModelInfo) as float32 bits;
	// 0: none known, send 1.
	topP atomic.Uint32
}

// ParseTarget reports whether upstreamURL selects the gRPC transport and returns its host:port.
func ParseTarget(upstreamURL string) (string, bool) {
	rest, ok := strings.CutPrefix(upstreamURL, Scheme)
	return strings.TrimRight(rest, "/"), ok
}

// New returns a Client for opts.Target. It does not connect: the first call does, and
// [Client.Health] is the readiness check.
func New(opts Options) (*Client, error) {
	target := opts.Target
	if t, ok := ParseTarget(target); ok {
		target = t
	}
	if target == "" {
		return nil, errors.New("vllmgrpc: empty target")
	}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
	}, opts.DialOptions...)
	conn, err := grpc.NewClient("passthrough:///"+target, dial...)
	if err != nil {
		return nil, fmt.Errorf("vllmgrpc: client for %s: %w", target, err)
	}
	newID := opts.NewRequestID
	if newID == nil {
		newID = randomRequestID
	}
	return &Client{target: target, conn: conn, engine: pb.NewVllmEngineClient(conn), newID: newID, salt: opts.AcceptSalt,
		watch: upstream.Watchdog{FirstByte: opts.FirstByteTimeout, Idle: opts.IdleTimeout}}, nil
}

// Close closes the connection; running streams fail.
func (c *Client) Close() error { return c.conn.Close() }

// BaseURL returns "grpc://host:port", for logs and the upstream's identity.
func (c *Client) BaseURL() string { return Scheme + c.target }

// Health reports nil when the engine answers HealthCheck with healthy.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.engine.HealthCheck(ctx, &pb.HealthCheckRequest{})
	if err != nil {
		return mapError("health check", err)
	}
	if !resp.GetHealthy() {
		return &upstream.StatusError{Status: 503, Body: errorBody(503, "ServiceUnavailable", "", "engine not healthy: "+resp.GetMessage())}
	}
	return nil
}

// ModelInfo is what GetModelInfo reports that stitch uses.
type ModelInfo struct {
	// ServedModelName is the name vLLM serves the model under (may be empty in older servicers).
	ServedModelName string
	ModelPath       string
	// MaxContextLength is max_model_len; 0 when not reported.
	MaxContextLength int
	// MaxRequestInputLen is the longest prompt accepted; 0 when not reported.
	MaxRequestInputLen int
	VocabSize          int
	// EOSTokenIDs are the model's end-of-sequence ids (generation_config's, as vLLM uses them).
	EOSTokenIDs []uint32
	// DefaultSamplingParamsJSON is vLLM's default sampling parameters (generation_config) as JSON.
	DefaultSamplingParamsJSON string
}

// ModelInfo calls GetModelInfo.
func (c *Client) ModelInfo(ctx context.Context) (ModelInfo, error) {
	resp, err := c.engine.GetModelInfo(ctx, &pb.GetModelInfoRequest{})
	if err != nil {
		return ModelInfo{}, mapError("get model info", err)
	}
	mi := ModelInfo{
		ServedModelName:           resp.GetServedModelName(),
		ModelPath:                 resp.GetModelPath(),
		MaxContextLength:          int(resp.GetMaxContextLength()),
		MaxRequestInputLen:        int(max(resp.GetMaxReqInputLen(), 0)),
		VocabSize:                 int(resp.GetVocabSize()),
		DefaultSamplingParamsJSON: resp.GetDefaultSamplingParamsJson(),
	}
	// proto3 cannot leave top_p unset, so the request carries the default vLLM's HTTP server
	// would apply (its default_sampling_params) when the turn sets none.
	if tp := gjson.Get(mi.DefaultSamplingParamsJSON, "top_p"); tp.Type == gjson.Number && tp.Float() > 0 && tp.Float() <= 1 {
		c.topP.Store(math.Float32bits(float32(tp.Float())))
	}
	for _, id := range resp.GetEosTokenIds() {
		if id >= 0 {
			mi.EOSTokenIDs = append(mi.EOSTokenIDs, uint32(id))
		}
	}
	return mi, nil
}

// Models returns the served model as the HTTP client's Models does (one entry; the id is
// served_model_name, else the model path).
func (c *Client) Models(ctx context.Context) ([]upstream.ModelInfo, error) {
	mi, err := c.ModelInfo(ctx)
	if err != nil {
		return nil, err
	}
	id := mi.ServedModelName
	if id == "" {
		id = mi.ModelPath
	}
	return []upstream.ModelInfo{{ID: id, MaxModelLen: mi.MaxContextLength}}, nil
}

// Abort asks the engine to stop the named requests.
func (c *Client) Abort(ctx context.Context, requestIDs ...string) error {
	if _, err := c.engine.Abort(ctx, &pb.AbortRequest{RequestIds: requestIDs}); err != nil {
		return mapError("abort", err)
	}
	return nil
}

// mapError turns a gRPC error into the HTTP client's error kinds.
func mapError(op string, err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("vllmgrpc %s: %w", op, err)
	}
	var code int
	var typ string
	switch st.Code() {
	case codes.Canceled:
		return fmt.Errorf("vllmgrpc %s: %w", op, context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("vllmgrpc %s: %w", op, context.DeadlineExceeded)
	case codes.Unavailable:
		return fmt.Errorf("vllmgrpc %s: %w: %s", op, upstream.ErrUnreachable, st.Message())
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		code, typ = 400, "BadRequestError"
	case codes.NotFound:
		code, typ = 404, "NotFoundError"
	case codes.ResourceExhausted:
		code, typ = 429, "TooManyRequests"
	case codes.Unimplemented:
		code, typ = 501, "NotImplementedError"
	default:
		code, typ = 500, "InternalServerError"
	}
	return &upstream.StatusError{Status: code, Body: errorBody(code, typ, "", st.Message())}
}

// errorBody is vLLM's HTTP error shape, so StatusError.Message and the server's mapping read it.
func errorBody(code int, typ, param, message string) []byte {
	b := []byte(`{"error":{"message":`)
	b = jsonappend.String(b, message)
	b = append(b, `,"type":`...)
	b = jsonappend.String(b, typ)
	b = append(b, `,"param":`...)
	if param == "" {
		b = append(b, "null"...)
	} else {
		b = jsonappend.String(b, param)
	}
	b = append(b, `,"code":`...)
	b = fmt.Appendf(b, "%d}}", code)
	return b
}

func randomRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "stitch-" + hex.EncodeToString(b[:])
}

var _ io.Closer = (*Client)(nil)

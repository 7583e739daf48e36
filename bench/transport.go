package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"

	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/upstream"
	"github.com/stitchllm/stitch/upstream/vllmgrpc"
	pb "github.com/stitchllm/stitch/upstream/vllmgrpc/enginepb"
)

// Transport is how the proxy reaches the simulator (issue 19): vLLM's HTTP API, or its gRPC
// engine API (`vllm serve --grpc`, `stitch sim --grpc-listen`).
type Transport string

// The transports compared.
const (
	TransportHTTP Transport = "http"
	TransportGRPC Transport = "grpc"
)

// ParseTransport reads a transport name.
func ParseTransport(s string) (Transport, error) {
	switch t := Transport(s); t {
	case TransportHTTP, TransportGRPC:
		return t, nil
	}
	return "", fmt.Errorf("%w: unknown transport %q (want http or grpc)", ErrBadOptions, s)
}

// modeLabel names a mode's column: the mode, with "/grpc" for the gRPC transport.
func modeLabel(m Mode, t Transport) string {
	if t == TransportGRPC {
		return string(m) + "/grpc"
	}
	return string(m)
}

// grpcAddresser is a SimInstance that serves the gRPC engine API too.
type grpcAddresser interface{ GRPCAddr() string }

// serveGRPC serves s's gRPC engine API on a loopback port.
func serveGRPC(s *sim.Server) (*grpc.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	s.RegisterGRPC(gs)
	go func() { _ = gs.Serve(ln) }()
	return gs, ln.Addr().String(), nil
}

// newCountingUpstream builds the proxy's upstream client for o.transport.
func newCountingUpstream(o proxyOptions) (*countingUpstream, error) {
	if o.transport != TransportGRPC {
		return &countingUpstream{Upstream: upstream.New(upstream.Options{BaseURL: o.upstream})}, nil
	}
	if o.grpcAddr == "" {
		return nil, fmt.Errorf("%w: the simulator serves no gRPC engine API", ErrSimUnavailable)
	}
	cu := &countingUpstream{grpc: &grpcCapture{samples: map[string]*bodyPair{}}}
	c, err := vllmgrpc.New(vllmgrpc.Options{
		Target:      o.grpcAddr,
		DialOptions: []grpc.DialOption{grpc.WithStreamInterceptor(cu.countGenerate)},
		// The bench has one tenant; its turns go unsalted, as stitch serve sends them.
		AcceptSalt: func(context.Context, string) error { return nil },
	})
	if err != nil {
		return nil, err
	}
	cu.Upstream, cu.close = c, func() { c.Close() }
	return cu, nil
}

var _ stack.Upstream = (*vllmgrpc.Client)(nil)

// countGenerate counts each GenerateRequest's protobuf bytes (the message, without gRPC's 5-byte
// frame and HTTP/2 headers, as the HTTP count is the body without headers).
func (c *countingUpstream) countGenerate(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string,
	streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &countingStream{ClientStream: cs, c: c, ctx: ctx}, nil
}

type countingStream struct {
	grpc.ClientStream
	c   *countingUpstream
	ctx context.Context
}

func (s *countingStream) SendMsg(m any) error {
	if req, ok := m.(*pb.GenerateRequest); ok {
		s.c.sent.Add(int64(proto.Size(req)))
		if slot, ok := s.ctx.Value(captureKey{}).(*captureSlot); ok {
			slot.req = req
		}
	}
	return s.ClientStream.SendMsg(m)
}

// countingGRPC is countingUpstream on the gRPC transport, with the server's typed token path
// (vllmgrpc.Client.CompletionChunks: protobuf out, chunks back) forwarded and counted by the
// interceptor. The HTTP transport's upstream lacks the method, so the server sends JSON there.
type countingGRPC struct {
	*countingUpstream
	client *vllmgrpc.Client // c.Upstream, typed
}

// CompletionChunks forwards the server's typed token path.
func (c countingGRPC) CompletionChunks(ctx context.Context, req *upstream.CompletionRequest) (upstream.ChunkStream, error) {
	var cs upstream.ChunkStream
	err := c.grpc.capture(ctx, func(ctx context.Context) (err error) {
		cs, err = c.client.CompletionChunks(ctx, req)
		return err
	}, func() []byte { return req.AppendJSON(nil) })
	return cs, err
}

// serverUpstream is what the proxy's server talks to: countingGRPC on gRPC, c itself on HTTP.
func (c *countingUpstream) serverUpstream() stack.Upstream {
	if g, ok := c.Upstream.(*vllmgrpc.Client); ok && c.grpc != nil {
		return countingGRPC{countingUpstream: c, client: g}
	}
	return c
}

// bodyPair is one turn's upstream request in both encodings.
type bodyPair struct {
	promptTokens int
	json, proto  []byte
}

// grpcCapture keeps, per context bucket, the first turn's request in both encodings: the JSON
// body the HTTP transport would send and the GenerateRequest sent, for the decode measurement.
type grpcCapture struct {
	mu      sync.Mutex
	samples map[string]*bodyPair
}

type captureKey struct{}

type captureSlot struct{ req *pb.GenerateRequest }

// capture runs call with a slot for the GenerateRequest it sends and keeps the turn's two
// encodings when its bucket has none yet (jsonBody makes the HTTP body then, and only then).
func (g *grpcCapture) capture(ctx context.Context, call func(ctx context.Context) error, jsonBody func() []byte) error {
	slot := &captureSlot{}
	err := call(context.WithValue(ctx, captureKey{}, slot))
	if slot.req != nil {
		n := len(slot.req.GetTokenized().GetInputIds())
		if b := bucketOf(n); b != "" {
			g.mu.Lock()
			if g.samples[b] == nil {
				pbBytes, merr := proto.Marshal(slot.req)
				if merr == nil {
					g.samples[b] = &bodyPair{promptTokens: n, json: jsonBody(), proto: pbBytes}
				}
			}
			g.mu.Unlock()
		}
	}
	return err
}

func (g *grpcCapture) pairs() map[string]*bodyPair {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]*bodyPair, len(g.samples))
	for k, v := range g.samples {
		out[k] = v
	}
	return out
}

// BodyDecodeResult is the upstream's cost of reading one request body, per context bucket, as a
// stand-in for vLLM's server: Python's json.loads of the /v1/completions body against protobuf's
// parse of the GenerateRequest (the same turn, captured during the gRPC run).
type BodyDecodeResult struct {
	// Python is the interpreter used; Protobuf its google.protobuf version and implementation
	// ("upb", "cpp" or "python"), empty when unavailable.
	Python   string `json:"python"`
	Protobuf string `json:"protobuf,omitempty"`
	// Note says what could not be measured, when something could not.
	Note    string       `json:"note,omitempty"`
	Samples []BodyDecode `json:"samples"`
}

// BodyDecode is one captured turn.
type BodyDecode struct {
	Bucket       string `json:"bucket"`
	PromptTokens int    `json:"prompt_tokens"`
	JSONBytes    int    `json:"json_bytes"`
	ProtoBytes   int    `json:"proto_bytes"`
	// JSONLoadsMS is the median of json.loads(body); ProtoParseMS of GenerateRequest.FromString,
	// ProtoListMS of that plus list(input_ids) (a Python list, what json.loads yields). Nil when
	// not measured.
	JSONLoadsMS  *float64 `json:"json_loads_ms"`
	ProtoParseMS *float64 `json:"proto_parse_ms"`
	ProtoListMS  *float64 `json:"proto_list_ms"`
}

// decodeScript times the decodes. argv: descriptor file, repetitions, then json/proto file pairs.
// It prints one JSON object per pair (times in ms), then {"protobuf": version or null}.
const decodeScript = `
import json, sys, time, statistics
desc, reps, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cls, ver = None, None
try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    import google.protobuf
    from google.protobuf.internal import api_implementation
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(open(desc, "rb").read()))
    d = pool.FindMessageTypeByName("vllm.grpc.engine.GenerateRequest")
    if hasattr(message_factory, "GetMessageClass"):
        cls = message_factory.GetMessageClass(d)
    else:
        cls = message_factory.MessageFactory(pool).GetPrototype(d)
    ver = google.protobuf.__version__ + " (" + api_implementation.Type() + ")"
except Exception:
    cls = None
def med(f, data):
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(data); ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)
for i in range(0, len(files), 2):
    j, p = open(files[i], "rb").read(), open(files[i+1], "rb").read()
    out = {"json_loads_ms": med(json.loads, j)}
    if cls is not None:
        out["proto_parse_ms"] = med(cls.FromString, p)
        out["proto_list_ms"] = med(lambda b: list(cls.FromString(b).tokenized.input_ids), p)
    print(json.dumps(out))
print(json.dumps({"protobuf": ver}))
`

// pythonWithProtobuf returns the first interpreter that imports google.protobuf, else the first
// that runs at all ("" for none).
func pythonWithProtobuf(ctx context.Context) (string, bool) {
	first := ""
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if err := exec.CommandContext(ctx, py, "-c", "import json").Run(); err != nil {
			continue
		}
		if first == "" {
			first = py
		}
		if exec.CommandContext(ctx, py, "-c", "import google.protobuf").Run() == nil {
			return py, true
		}
	}
	return first, false
}

// measureBodyDecode times the captured pairs with Python (reps repetitions each).
func measureBodyDecode(ctx context.Context, pairs map[string]*bodyPair, reps int) (*BodyDecodeResult, error) {
	py, hasPB := pythonWithProtobuf(ctx)
	res := &BodyDecodeResult{Python: py}
	var order []string
	for _, b := range buckets {
		if p := pairs[b.name]; p != nil {
			order = append(order, b.name)
			res.Samples = append(res.Samples, BodyDecode{Bucket: b.name, PromptTokens: p.promptTokens,
				JSONBytes: len(p.json), ProtoBytes: len(p.proto)})
		}
	}
	if py == "" {
		res.Note = "no python3: decode times not measured"
		return res, nil
	}
	if !hasPB {
		res.Note = "google.protobuf is not installed for Python (Debian: python3-protobuf): only json.loads measured"
	}
	dir, err := os.MkdirTemp("", "stitch-bench-decode-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fdp, err := proto.Marshal(protodesc.ToFileDescriptorProto(pb.File_vllm_engine_proto))
	if err != nil {
		return nil, fmt.Errorf("engine descriptor: %w", err)
	}
	args := []string{"-c", decodeScript, filepath.Join(dir, "engine.desc"), strconv.Itoa(reps)}
	files := map[string][]byte{"engine.desc": fdp}
	for _, b := range order {
		files[b+".json"], files[b+".pb"] = pairs[b].json, pairs[b].proto
		args = append(args, filepath.Join(dir, b+".json"), filepath.Join(dir, b+".pb"))
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	out, err := exec.CommandContext(ctx, py, args...).Output()
	if err != nil {
		return nil, fmt.Errorf("python decode timing: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(order)+1 {
		return nil, fmt.Errorf("python decode timing: %d lines for %d samples", len(lines), len(order))
	}
	for i := range order {
		s := &res.Samples[i]
		var v struct {
			J *float64 `json:"json_loads_ms"`
			P *float64 `json:"proto_parse_ms"`
			L *float64 `json:"proto_list_ms"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &v); err != nil {
			return nil, fmt.Errorf("python decode timing: %w", err)
		}
		s.JSONLoadsMS, s.ProtoParseMS, s.ProtoListMS = v.J, v.P, v.L
	}
	var tail struct {
		Protobuf *string `json:"protobuf"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &tail); err == nil && tail.Protobuf != nil {
		res.Protobuf = *tail.Protobuf
	}
	return res, nil
}

// writeBodyDecode prints the decode comparison.
func writeBodyDecode(w io.Writer, d *BodyDecodeResult) {
	fmt.Fprintf(w, "\nupstream body decode (%s; protobuf %s):\n", d.Python, orDash(d.Protobuf))
	for _, s := range d.Samples {
		fmt.Fprintf(w, "  @%-4s %6d ids: JSON %8d B, json.loads %s ms | protobuf %8d B (%.2f×), parse %s ms, parse+list %s ms\n",
			s.Bucket, s.PromptTokens, s.JSONBytes, ms(s.JSONLoadsMS), s.ProtoBytes, float64(s.JSONBytes)/float64(max(s.ProtoBytes, 1)),
			ms(s.ProtoParseMS), ms(s.ProtoListMS))
	}
	if d.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", d.Note)
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

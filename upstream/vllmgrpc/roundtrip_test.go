package vllmgrpc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"google.golang.org/grpc"

	"github.com/stitchllm/stitch/render/bpe"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/stream"
	"github.com/stitchllm/stitch/upstream"
	"github.com/stitchllm/stitch/upstream/vllmgrpc"
)

var qwenTokenizer = sync.OnceValues(func() (*bpe.Tokenizer, error) {
	data, err := os.ReadFile(filepath.Join("../../testdata/models/qwen3", "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	return bpe.Load(data)
})

// simPair is one simulator serving HTTP and gRPC, and a client for each.
type simPair struct {
	sim    *sim.Server
	http   *upstream.Client
	grpc   *vllmgrpc.Client
	target string // the gRPC address, for clients with other options
}

// startSim starts a simulator on loopback (HTTP via httptest, gRPC on a TCP port).
func startSim(t *testing.T, opts sim.Options) *simPair {
	t.Helper()
	tok, err := qwenTokenizer()
	if err != nil {
		t.Fatalf("load tokenizer: %v", err)
	}
	opts.Tokenizer = tok
	s, err := sim.New(opts)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	gs := grpc.NewServer()
	s.RegisterGRPC(gs)
	go gs.Serve(ln) //nolint:errcheck // Stop ends it
	t.Cleanup(gs.Stop)
	gc, err := vllmgrpc.New(vllmgrpc.Options{Target: "grpc://" + ln.Addr().String()})
	if err != nil {
		t.Fatalf("vllmgrpc.New: %v", err)
	}
	t.Cleanup(func() { gc.Close() })
	return &simPair{sim: s, http: upstream.New(upstream.Options{BaseURL: hs.URL}), grpc: gc, target: ln.Addr().String()}
}

func chatPrompt(t *testing.T, user string) []uint32 {
	t.Helper()
	tok, _ := qwenTokenizer()
	// A system turn makes the prompt longer than a KV block, so repeats hit the prefix cache.
	return tok.Encode("<|im_start|>system\nYou are a helpful assistant. Answer briefly and precisely, in plain words.<|im_end|>\n" +
		"<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n")
}

// outcome is what the server's parser reads from a token-path stream.
type outcome struct {
	IDs          []uint32
	PromptLen    int // the prompt echo's length (the parser counts it, never copies it)
	Finish       string
	StopReason   string
	Usage        stream.Usage
	ChunksWithID int
}

// chunkSource is a token-path stream read as chunks: an SSE body through stream.ChunkReader
// (sseChunks), or CompletionChunks' stream.
type chunkSource interface {
	Next() (*stream.Chunk, error)
	Close() error
}

type sseSource struct {
	*stream.ChunkReader
	body io.Closer
}

func (s sseSource) Close() error { return s.body.Close() }

// sseChunks reads an SSE body as the server does.
func sseChunks(body io.ReadCloser) chunkSource { return sseSource{stream.NewChunkReader(body), body} }

func readOutcome(t *testing.T, chunks chunkSource) outcome {
	t.Helper()
	defer chunks.Close()
	var o outcome
	for {
		c, err := chunks.Next()
		if errors.Is(err, io.EOF) {
			return o
		}
		if err != nil {
			t.Fatalf("read stream: %v", err)
		}
		if c.Err != nil {
			t.Fatalf("in-stream error: %v", c.Err)
		}
		if len(c.TokenIDs) > 0 {
			o.ChunksWithID++
		}
		o.IDs = append(o.IDs, c.TokenIDs...)
		if c.PromptTokens > 0 {
			o.PromptLen = c.PromptTokens
		}
		if c.FinishReason != "" {
			o.Finish, o.StopReason = c.FinishReason, string(c.StopReason)
		}
		if c.Usage != nil {
			o.Usage = *c.Usage
		}
	}
}

// The gRPC transport, through the SSE adapter, gives the server's parser what the HTTP path gives
// it for the same request: the same ids, finish and stop reason and usage (cached
// tokens included, from the shared prefix cache).
func TestCompletionsSameOverBothTransports(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true})
	ctx := context.Background()
	seed := int64(42)
	tests := []struct {
		name string
		req  upstream.CompletionRequest
	}{
		{"eos", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Paris"), MaxTokens: 400, Seed: &seed}},
		{"length", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Rome"), MaxTokens: 5, Seed: &seed}},
		{"stop id", upstream.CompletionRequest{Prompt: chatPrompt(t, "Tell me about Oslo"), MaxTokens: 400, Seed: &seed,
			StopTokenIDs: []uint32{13}}}, // "." ends the first sentence
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Model, req.Stream, req.IncludeUsage, req.ReturnTokenIDs = "qwen3", true, true, true
			var got [2][2]outcome // [transport][first, repeat]
			for round := range 2 {
				for i, u := range []interface {
					Completions(context.Context, [][]byte) (io.ReadCloser, error)
				}{p.http, p.grpc} {
					body, err := u.Completions(ctx, req.Parts())
					if err != nil {
						t.Fatalf("transport %d: Completions: %v", i, err)
					}
					got[i][round] = readOutcome(t, sseChunks(body))
				}
				// The typed entry (the server's token path) reads what the encoded one reads.
				cs, err := p.grpc.CompletionChunks(ctx, &req)
				if err != nil {
					t.Fatalf("CompletionChunks: %v", err)
				}
				typed := readOutcome(t, cs)
				typed.Usage.CachedTokens = got[1][round].Usage.CachedTokens // a later request: more cached
				if diff := cmp.Diff(got[1][round], typed); diff != "" {
					t.Errorf("round %d: CompletionChunks differs from Completions (-encoded +typed):\n%s", round, diff)
				}
			}
			// vLLM's HTTP route echoes the prompt in the first chunk; the engine API does not,
			// and the adapter fabricates no echo (the server never reads it).
			for round := range 2 {
				if got[0][round].PromptLen != len(req.Prompt) {
					t.Errorf("round %d: HTTP prompt echo has %d ids, %d were sent", round, got[0][round].PromptLen, len(req.Prompt))
				}
				if got[1][round].PromptLen != 0 {
					t.Errorf("round %d: gRPC adapter echoed %d prompt ids", round, got[1][round].PromptLen)
				}
				got[0][round].PromptLen = 0
			}
			http, grpcOut := got[0][0], got[1][0]
			if len(http.IDs) == 0 || http.Finish == "" {
				t.Fatalf("HTTP outcome is empty: %+v", http)
			}
			// The first HTTP request warmed the cache for every later one.
			http.Usage.CachedTokens = got[0][1].Usage.CachedTokens
			if diff := cmp.Diff(http, grpcOut); diff != "" {
				t.Errorf("gRPC outcome differs from HTTP (-http +grpc):\n%s", diff)
			}
			if diff := cmp.Diff(got[0][1], got[1][1]); diff != "" {
				t.Errorf("repeat: gRPC outcome differs from HTTP (-http +grpc):\n%s", diff)
			}
			if grpcOut.Usage.CachedTokens == 0 {
				t.Errorf("cached_tokens = 0 on a repeated prompt of %d tokens", len(req.Prompt))
			}
		})
	}
}

// The typed stream carries the same ids as the adapter, in chunks of --stream-interval ids.
func TestGenerateStreamInterval(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true, StreamInterval: 4})
	seed := int64(3)
	req := &upstream.CompletionRequest{Model: "qwen3", Prompt: chatPrompt(t, "Hello"), MaxTokens: 400, Seed: &seed}
	st, err := p.grpc.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	defer st.Close()
	var ids []uint32
	var last vllmgrpc.Chunk
	chunks := 0
	for {
		c, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		// vLLM sends the first id at once, then stream-interval ids per chunk.
		if want := 4; c.FinishReason == "" && len(c.TokenIDs) != want && !(len(ids) == 0 && len(c.TokenIDs) == 1) {
			t.Errorf("chunk %d has %d ids, want %d", chunks, len(c.TokenIDs), want)
		}
		chunks++
		ids = append(ids, c.TokenIDs...)
		last = c
	}
	if last.FinishReason != "stop" || last.CompletionTokens != len(ids) || last.PromptTokens != len(req.Prompt) {
		t.Errorf("final chunk %+v after %d ids", last, len(ids))
	}
	body, err := p.http.Completions(context.Background(), (&upstream.CompletionRequest{Model: "qwen3", Prompt: req.Prompt,
		MaxTokens: 400, Seed: &seed, Stream: true, ReturnTokenIDs: true}).Parts())
	if err != nil {
		t.Fatalf("HTTP Completions: %v", err)
	}
	if want := readOutcome(t, sseChunks(body)).IDs; !slices.Equal(ids, want) {
		t.Errorf("gRPC ids %v, HTTP ids %v", ids, want)
	}
}

// recordLines hands the simulator's record lines to the test as they are written.
func recordLines(t *testing.T) (io.Writer, <-chan string) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return pw, lines
}

// A cancelled context (the client went away) and an explicit Abort both end the request on the
// simulator as "abort" and free its KV blocks.
func TestAbortFreesRequest(t *testing.T) {
	for _, how := range []string{"cancel", "abort rpc"} {
		t.Run(how, func(t *testing.T) {
			rec, lines := recordLines(t)
			// The first id comes at once; the second would take an hour.
			p := startSim(t, sim.Options{DecodePerToken: time.Hour, Record: rec})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := p.grpc.Generate(ctx, &upstream.CompletionRequest{Model: "qwen3", Prompt: chatPrompt(t, "Hello"), MaxTokens: 100})
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			defer st.Close()
			if c, err := st.Recv(); err != nil || len(c.TokenIDs) != 1 {
				t.Fatalf("first chunk = %+v, %v", c, err)
			}
			if used := p.sim.Stats().Used; used == 0 {
				t.Fatalf("no KV blocks held by the running request")
			}
			switch how {
			case "cancel":
				cancel()
			case "abort rpc":
				if err := p.grpc.Abort(context.Background(), st.RequestID()); err != nil {
					t.Fatalf("Abort: %v", err)
				}
				c, err := st.Recv()
				if err != nil || c.FinishReason != "abort" {
					t.Errorf("after Abort: chunk %+v, err %v; want finish_reason abort", c, err)
				}
			}
			line := <-lines
			if fin := gjson.Get(line, "finish_reason").String(); fin != "abort" {
				t.Errorf("record line finish_reason = %q, want abort: %s", fin, line)
			}
			if used := p.sim.Stats().Used; used != 0 {
				t.Errorf("%d KV blocks still held after the abort", used)
			}
		})
	}
}

func TestModelInfoAndHealth(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true, MaxModelLen: 4096, ServedModelName: "qwen3"})
	ctx := context.Background()
	if err := p.grpc.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	mi, err := p.grpc.ModelInfo(ctx)
	if err != nil {
		t.Fatalf("ModelInfo: %v", err)
	}
	tok, _ := qwenTokenizer()
	imEnd, _ := tok.TokenID("<|im_end|>")
	eot, _ := tok.TokenID("<|endoftext|>")
	want := vllmgrpc.ModelInfo{ServedModelName: "qwen3", ModelPath: "qwen3", MaxContextLength: 4096,
		MaxRequestInputLen: 4096, VocabSize: tok.VocabSize(), EOSTokenIDs: []uint32{imEnd, eot}}
	if diff := cmp.Diff(want, mi); diff != "" {
		t.Errorf("ModelInfo (-want +got):\n%s", diff)
	}
	models, err := p.grpc.Models(ctx)
	if err != nil || len(models) != 1 || models[0] != (upstream.ModelInfo{ID: "qwen3", MaxModelLen: 4096}) {
		t.Errorf("Models = %v, %v", models, err)
	}
	httpModels, err := p.http.Models(ctx)
	if err != nil || !slices.Equal(models, httpModels) {
		t.Errorf("gRPC models %v differ from HTTP models %v (%v)", models, httpModels, err)
	}
}

// The simulator's validation reaches the client as the HTTP path's 400, with vLLM's message.
func TestValidationErrors(t *testing.T) {
	p := startSim(t, sim.Options{Fast: true, MaxModelLen: 64})
	tests := []struct {
		name string
		req  upstream.CompletionRequest
		want string
	}{
		{"too long", upstream.CompletionRequest{Prompt: make([]uint32, 65), MaxTokens: 1}, "context length is only 64 tokens"},
		{"max tokens past context", upstream.CompletionRequest{Prompt: make([]uint32, 60), MaxTokens: 10}, "requested 10 output tokens"},
		{"out of vocabulary", upstream.CompletionRequest{Prompt: []uint32{1 << 30}, MaxTokens: 1}, "out of vocabulary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, u := range []interface {
				Completions(context.Context, [][]byte) (io.ReadCloser, error)
			}{p.http, p.grpc} {
				tt.req.Model, tt.req.Stream = "qwen3", true
				_, err := u.Completions(context.Background(), tt.req.Parts())
				var se *upstream.StatusError
				if !errors.As(err, &se) || se.Status != 400 || !strings.Contains(se.Message(), tt.want) {
					t.Errorf("transport %d: err = %v, want a 400 containing %q", i, err, tt.want)
				}
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := vllmgrpc.New(vllmgrpc.Options{Target: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Health(context.Background()); !errors.Is(err, upstream.ErrUnreachable) {
		t.Errorf("Health = %v, want ErrUnreachable", err)
	}
}

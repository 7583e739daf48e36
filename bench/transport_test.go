package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Both transports run the same workload: the simulator sees the same prompts (equal prefix-cache
// counters), the gRPC run sends fewer bytes, and a body of the 1k bucket is captured in both
// encodings for the decode comparison.
func TestRunTransports(t *testing.T) {
	if testing.Short() {
		t.Skip("drives two proxies and simulators")
	}
	m := loadDemo(t)
	w := tinyWorkload()
	res, err := Run(context.Background(), Options{Workload: w, Model: m, Sim: InProcessSim{Model: m},
		Modes: []Mode{ModeCanonical}, Transports: []Transport{TransportHTTP, TransportGRPC}, DecodeReps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Modes) != 2 {
		t.Fatalf("%d mode results, want 2", len(res.Modes))
	}
	h, g := res.Modes[0], res.Modes[1]
	if h.Mode != "canonical" || g.Mode != "canonical/grpc" || h.Transport != "http" || g.Transport != "grpc" {
		t.Errorf("columns %q/%q, transports %q/%q", h.Mode, g.Mode, h.Transport, g.Transport)
	}
	if h.Turns != g.Turns || h.PromptTokens != g.PromptTokens || h.CachedTokens != g.CachedTokens {
		t.Errorf("the transports' workloads differ: turns %d/%d, prompt %d/%d, cached %d/%d",
			h.Turns, g.Turns, h.PromptTokens, g.PromptTokens, h.CachedTokens, g.CachedTokens)
	}
	if g.BytesToUpstream <= 0 || g.BytesToUpstream >= h.BytesToUpstream {
		t.Errorf("bytes to upstream: gRPC %d, HTTP %d; want 0 < gRPC < HTTP", g.BytesToUpstream, h.BytesToUpstream)
	}
	d := res.BodyDecode
	if d == nil || len(d.Samples) == 0 {
		t.Fatalf("no body decode samples: %+v", d)
	}
	for _, s := range d.Samples {
		if s.ProtoBytes <= 0 || s.ProtoBytes >= s.JSONBytes {
			t.Errorf("@%s: protobuf %d B, JSON %d B", s.Bucket, s.ProtoBytes, s.JSONBytes)
		}
		if d.Python != "" && s.JSONLoadsMS == nil {
			t.Errorf("@%s: json.loads not timed with %s", s.Bucket, d.Python)
		}
		if d.Protobuf != "" && s.ProtoParseMS == nil {
			t.Errorf("@%s: protobuf parse not timed with %s", s.Bucket, d.Protobuf)
		}
	}
	var out bytes.Buffer
	if err := res.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "upstream body decode") {
		t.Errorf("table lacks the decode comparison:\n%s", out.String())
	}
}

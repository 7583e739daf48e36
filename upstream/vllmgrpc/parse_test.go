package vllmgrpc

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/stitchllm/stitch/upstream"
)

func TestParseIDs(t *testing.T) {
	tests := []struct {
		raw  string
		want []uint32
		ok   bool
	}{
		{"[]", []uint32{}, true},
		{"[ ]", []uint32{}, true},
		{"[0]", []uint32{0}, true},
		{"[1,2,3]", []uint32{1, 2, 3}, true},
		{"[ 151644 ,\n198 ]", []uint32{151644, 198}, true},
		{"[4294967295]", []uint32{math.MaxUint32}, true},
		{"[4294967296]", nil, false},
		{"[01]", nil, false},
		{"[-1]", nil, false},
		{"[1.0]", nil, false},
		{"[1e3]", nil, false},
		{"[1,]", nil, false},
		{"[,1]", nil, false},
		{"[1 2]", nil, false},
		{"[1,,2]", nil, false},
		{`["1"]`, nil, false},
		{"[1", nil, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		got, ok := parseIDs(tt.raw)
		if ok != tt.ok || (ok && !slices.Equal(got, tt.want)) {
			t.Errorf("parseIDs(%q) = %v, %v; want %v, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

// parseIDs accepts exactly the JSON arrays of integers in [0, 2³²) that encoding/json reads as
// []uint32 without a leading zero, sign, fraction or exponent, and reads the same values.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"[]", "[1,2]", "[ 3 , 4 ]", "[01]", "[1e2]", "[4294967296]", "[1,]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, ok := parseIDs(raw)
		if !ok {
			return
		}
		var want []uint32
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("parseIDs(%q) accepted what encoding/json refuses: %v", raw, err)
		}
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("parseIDs(%q) = %v, encoding/json %v", raw, got, want)
		}
	})
}

// top_p: the request's, else the engine's generation_config default, else vLLM's 1.
func TestBuildRequestTopP(t *testing.T) {
	tests := []struct {
		name    string
		engine  float32 // 0: none reported
		request string
		want    float32
	}{
		{"no default", 0, "", 1},
		{"engine default", 0.8, "", 0.8},
		{"request wins", 0.8, "0.5", 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{newID: func() string { return "r" }}
			if tt.engine != 0 {
				c.topP.Store(math.Float32bits(tt.engine))
			}
			req := &upstream.CompletionRequest{Prompt: []uint32{1}, MaxTokens: 2}
			if tt.request != "" {
				req.TopP = json.RawMessage(tt.request)
			}
			g, err := c.buildRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.GetSamplingParams().GetTopP(); got != tt.want {
				t.Errorf("top_p = %v, want %v", got, tt.want)
			}
		})
	}
}

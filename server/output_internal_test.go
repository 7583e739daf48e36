package server

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stitchllm/stitch/stream"
	"github.com/stitchllm/stitch/upstream"
)

// TestPromptArray: the pieces promptArray finds in a request's parts are its prompt array's
// contents, with and without a prefix already encoded (some ids or all), and a reader told them takes vLLM's echo
// of that prompt (pydantic's compact JSON) as the prompt sent.
func TestPromptArray(t *testing.T) {
	ids := []uint32{151644, 872, 198, 0, 4294967295, 13, 151645}
	var compact []byte
	var prefix, all []byte
	for i, id := range ids {
		all = append(strconv.AppendUint(all, uint64(id), 10), ',')
		if i > 0 {
			compact = append(compact, ',')
		}
		compact = strconv.AppendUint(compact, uint64(id), 10)
		if i < 3 {
			prefix = append(strconv.AppendUint(prefix, uint64(id), 10), ',')
		}
	}
	for _, req := range []upstream.CompletionRequest{
		{Model: "m", Prompt: ids, MaxTokens: 5, Stream: true, ReturnTokenIDs: true, StructuredOutputs: []byte(`{"json":{"enum":[1]}}`)},
		{Model: `a "prompt":[`, Prompt: ids, PromptPrefix: prefix, PromptPrefixIDs: 3, MaxTokens: 5, StopTokenIDs: []uint32{2}},
		{Model: "m", Prompt: ids, PromptPrefix: all, PromptPrefixIDs: len(ids), MaxTokens: 5}, // every id encoded already
		{Model: "m", Prompt: ids[:1], MaxTokens: 1},
	} {
		parts := req.Parts()
		array, ok := promptArray(parts)
		if !ok {
			t.Fatalf("%s: no prompt array found", bytes.Join(parts, nil))
		}
		want := compact
		if len(req.Prompt) == 1 {
			want = []byte("151644")
		}
		if got := bytes.Join(array, nil); !bytes.Equal(got, want) {
			t.Errorf("array %s, want %s", got, want)
		}
		if len(req.PromptPrefix) > 0 && (len(array) != 2 || &array[0][0] != &req.PromptPrefix[0]) {
			t.Errorf("the prefix was not passed as it is")
		}
		echo := `data: {"choices":[{"index":0,"text":"a","token_ids":[5],"prompt_token_ids":[` + string(want) + `]}]}` + "\n\n"
		r := stream.NewChunkReader(bytes.NewReader([]byte(echo)))
		r.ExpectPromptEcho(len(req.Prompt), array...)
		c, err := r.Next()
		if err != nil || c.PromptTokens != len(req.Prompt) || c.PromptEchoDiffers {
			t.Errorf("echo read as %d ids, differs %v, %v", c.PromptTokens, c.PromptEchoDiffers, err)
		}
	}
	if _, ok := promptArray([][]byte{[]byte(`{"model":"m","prompt":"text"}`)}); ok {
		t.Error("a text prompt gave an array")
	}
}

package server

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/stream"
)

// Logprobs (issue 18 item 4): include "message.output_text.logprobs" or top_logprobs 1-20 asks for
// the logprobs of the message text's tokens. They are requested from vLLM (logprobs: N with
// tokens as ids, on either transport) and mapped onto the message text by stream.LogprobMapper;
// reasoning and tool-call tokens get none.

// maxTopLogprobs is the spec's bound, and vLLM's default --max-logprobs.
const maxTopLogprobs = 20

// parseLogprobs returns the alternatives per token the request asks for, or -1 for no logprobs.
// top_logprobs alone asks for logprobs too: alternatives come with the token they stand beside.
func parseLogprobs(root jsonObject) (int, error) {
	n := -1
	if v := root.Get("top_logprobs"); v.Exists() && v.Type != gjson.Null {
		k, err := strconv.ParseInt(v.Raw, 10, 64)
		if v.Type != gjson.Number || err != nil || k < 0 || k > maxTopLogprobs {
			return 0, badRequest("top_logprobs", "Invalid 'top_logprobs': expected an integer between 0 and %d, but got %s instead.", maxTopLogprobs, v.Raw)
		}
		if k > 0 {
			n = int(k)
		}
	}
	if inc := root.Get("include"); inc.IsArray() {
		for _, e := range inc.Array() {
			if e.Str == "message.output_text.logprobs" && n < 0 {
				n = 0
			}
		}
	}
	return n, nil
}

// logprobMapper returns the decoder the output parser must use and the mapper for the converter
// when the request asks for logprobs; dec and nil otherwise.
func logprobMapper(m *ModelRuntime, req *request, dec stream.TokenDecoder) (stream.TokenDecoder, *stream.LogprobMapper) {
	if req.Logprobs < 0 {
		return dec, nil
	}
	alt := m.NewDecoder() // one token at a time: Flush resets it
	lm := stream.NewLogprobMapper(dec, stream.LogprobOptions{TopN: req.Logprobs, TokenText: func(id uint32) string {
		return alt.Next(id) + alt.Flush()
	}})
	return lm.Decoder(), lm
}

// storedItemJSON is an output item as the conversation stores it: without logprobs. The
// conversation's items are read back on every continuation and only their text reaches the
// prompt; a long answer with top_logprobs 20 would otherwise store megabytes per turn. The
// response object itself (GET /v1/responses/{id}) keeps them.
func storedItemJSON(it *stream.Item) []byte {
	strip := false
	for _, p := range it.Content {
		strip = strip || len(p.Logprobs) > 0
	}
	if !strip {
		return it.AppendJSON(nil)
	}
	c := *it
	c.Content = make([]stream.ContentPart, len(it.Content))
	for i, p := range it.Content {
		p.Logprobs = nil
		c.Content[i] = p
	}
	return c.AppendJSON(nil)
}

package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// testLogprobs: include message.output_text.logprobs with top_logprobs, with the Go SDK, streamed
// and not: the message's tokens concatenate to its text, each with top_logprobs sorted and as many
// as asked; the stream's deltas list the same tokens; top_logprobs 21 is a 400 naming it.
func testLogprobs(t *testing.T, st *stack) {
	c := st.client()
	ctx := testContext(t)
	params := responses.ResponseNewParams{
		Model: modelName, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Describe a lighthouse in two sentences.")},
		Include:     []responses.ResponseIncludable{responses.ResponseIncludableMessageOutputTextLogprobs},
		TopLogprobs: openai.Int(3),
	}
	resp, err := c.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var lps []responses.ResponseOutputTextLogprob
	for _, it := range resp.Output {
		if it.Type != "message" {
			continue
		}
		for _, part := range it.AsMessage().Content {
			text += part.Text
			lps = append(lps, part.Logprobs...)
		}
	}
	if text == "" || len(lps) == 0 {
		t.Fatalf("no message text with logprobs: %s", resp.RawJSON())
	}
	var joined strings.Builder
	for _, lp := range lps {
		joined.WriteString(lp.Token)
		if lp.Logprob > 0 || len(lp.Bytes) != len(lp.Token) {
			t.Errorf("logprob %+v", lp)
		}
		if len(lp.TopLogprobs) != 3 {
			t.Errorf("%d top_logprobs, want 3", len(lp.TopLogprobs))
		}
		for j := 1; j < len(lp.TopLogprobs); j++ {
			if lp.TopLogprobs[j].Logprob > lp.TopLogprobs[j-1].Logprob {
				t.Errorf("top_logprobs not sorted: %+v", lp.TopLogprobs)
			}
		}
	}
	if joined.String() != text {
		t.Errorf("logprob tokens join to %q, text %q", joined.String(), text)
	}

	s := c.Responses.NewStreaming(ctx, params)
	defer s.Close()
	var deltas []responses.ResponseTextDeltaEventLogprob
	var streamed strings.Builder
	for s.Next() {
		if ev := s.Current(); ev.Type == "response.output_text.delta" {
			d := ev.AsResponseOutputTextDelta()
			deltas = append(deltas, d.Logprobs...)
			streamed.WriteString(d.Delta)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if streamed.String() != text || len(deltas) != len(lps) {
		t.Errorf("stream: %d delta logprobs for %q, want %d for %q", len(deltas), streamed.String(), len(lps), text)
	}
	for i := range min(len(deltas), len(lps)) {
		if deltas[i].Logprob != lps[i].Logprob || len(deltas[i].TopLogprobs) != 3 {
			t.Errorf("delta logprob %d = %+v, response %+v", i, deltas[i], lps[i])
		}
	}

	bad := params
	bad.TopLogprobs = openai.Int(21)
	_, err = c.Responses.New(ctx, bad)
	wantAPIError(t, err, http.StatusBadRequest, "invalid_request_error", "", "top_logprobs")
}

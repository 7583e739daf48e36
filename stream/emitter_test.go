package stream_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stitchllm/stitch/stream"
)

func newEmitter(opts stream.EmitterOptions) *stream.Emitter {
	opts.NewID = counterIDs()
	opts.Now = fixedNow
	return stream.NewEmitter(opts)
}

func eventTypes(events []stream.Event) []string {
	var out []string
	for _, ev := range events {
		out = append(out, ev.EventType())
	}
	return out
}

func encodeAll(t *testing.T, events []stream.Event) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := stream.NewEncoder(&b).EncodeAll(events); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEmitterFailBeforeOutput(t *testing.T) {
	t.Parallel()
	e := newEmitter(stream.EmitterOptions{})
	events := e.Fail(nil, "server_error", "upstream unreachable")
	want := []string{stream.EventResponseCreated, stream.EventResponseInProgress, stream.EventResponseFailed}
	if diff := cmp.Diff(want, eventTypes(events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	checkStream(t, encodeAll(t, events))
	r := e.Response()
	if r.Status != stream.StatusFailed || r.Error == nil || r.Error.Message != "upstream unreachable" || r.CompletedAt != 0 {
		t.Errorf("response = %+v", r)
	}
	if more := e.Apply(nil, stream.Piece{Kind: stream.PieceText, Text: "late"}); len(more) != 0 || !e.Ended() {
		t.Errorf("Apply after the end produced %d events", len(more))
	}
}

func TestEmitterAbortFails(t *testing.T) {
	t.Parallel()
	e := newEmitter(stream.EmitterOptions{})
	events := e.Start(nil)
	events = e.Apply(events, stream.Piece{Kind: stream.PieceText, Text: "Hel"})
	events = e.Complete(events, stream.FinishAbort, &stream.Usage{PromptTokens: 3, CompletionTokens: 1},
		stream.Piece{Kind: stream.PieceText, Text: "lo"}, stream.Piece{Kind: stream.PieceTextDone, Start: 0, End: 1})
	checkStream(t, encodeAll(t, events))
	r := e.Response()
	if r.Status != stream.StatusFailed || r.Output[0].Status != stream.StatusIncomplete || r.Output[0].Text() != "Hello" {
		t.Errorf("response = %+v", r)
	}
	if r.Usage == nil || r.Usage.TotalTokens != 4 {
		t.Errorf("usage = %+v", r.Usage)
	}
}

func TestEmitterMergesDeltasPerCall(t *testing.T) {
	t.Parallel()
	e := newEmitter(stream.EmitterOptions{})
	events := e.Apply(nil,
		stream.Piece{Kind: stream.PieceReasoning, Text: "a"}, stream.Piece{Kind: stream.PieceReasoning, Text: "b"},
		stream.Piece{Kind: stream.PieceReasoningDone, Start: 0, End: 3},
		stream.Piece{Kind: stream.PieceText, Text: "c"}, stream.Piece{Kind: stream.PieceText, Text: "d"})
	events = e.Apply(events, stream.Piece{Kind: stream.PieceText, Text: "e"})
	var deltas []string
	for _, ev := range events {
		if d, ok := ev.(*stream.TextDeltaEvent); ok {
			deltas = append(deltas, d.Delta)
		}
	}
	if diff := cmp.Diff([]string{"ab", "cd", "e"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	// In progress: only finished items are in the snapshot.
	if r := e.Response(); r.Status != stream.StatusInProgress || len(r.Output) != 1 || r.Output[0].Type != stream.ItemReasoning {
		t.Errorf("in-progress snapshot = %+v", r)
	}
	events = e.Complete(events, stream.FinishStop, nil)
	checkStream(t, encodeAll(t, events))
	if r := e.Response(); r.Usage != nil || r.Output[1].Text() != "cde" {
		t.Errorf("final = %+v", r)
	}
}

func TestEmitterOnItemDoneAndBase(t *testing.T) {
	t.Parallel()
	var seen []stream.ItemRange
	e := newEmitter(stream.EmitterOptions{
		Response: stream.Response{ID: "resp_fixed", Model: "qwen3", PreviousResponseID: "resp_prev", Instructions: []byte(`"be brief"`)},
		OnItemDone: func(it *stream.Item, r stream.ItemRange) {
			seen = append(seen, r)
			if it.Type == stream.ItemReasoning {
				it.EncryptedContent = "sealed:" + it.ID
			}
		},
	})
	events := e.Apply(nil,
		stream.Piece{Kind: stream.PieceReasoning, Text: "x"}, stream.Piece{Kind: stream.PieceReasoningDone, Start: 0, End: 4},
		stream.Piece{Kind: stream.PieceToolCall, Text: "f"}, stream.Piece{Kind: stream.PieceArguments, Text: "{}"},
		stream.Piece{Kind: stream.PieceToolCallDone, Start: 5, End: 12})
	events = e.Complete(events, stream.FinishStop, &stream.Usage{PromptTokens: 10, CompletionTokens: 13, CachedTokens: 8})
	sse := encodeAll(t, events)
	checkStream(t, sse)
	want := []stream.ItemRange{
		{OutputIndex: 0, ItemID: "rs_0001", Type: stream.ItemReasoning, Start: 0, End: 4},
		{OutputIndex: 1, ItemID: "fc_0001", Type: stream.ItemFunctionCall, Start: 5, End: 12},
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("OnItemDone ranges (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, e.Ranges()); diff != "" {
		t.Errorf("Ranges (-want +got):\n%s", diff)
	}
	r := e.Response()
	if r.ID != "resp_fixed" || r.Output[0].EncryptedContent != "sealed:rs_0001" || r.PreviousResponseID != "resp_prev" {
		t.Errorf("response = %+v", r)
	}
	if u := r.Usage; u.OutputTokensDetails.ReasoningTokens != 4 || u.InputTokensDetails.CachedTokens != 8 || u.TotalTokens != 23 {
		t.Errorf("usage = %+v", u)
	}
	if !strings.Contains(string(sse), `"encrypted_content":"sealed:rs_0001"`) || !strings.Contains(string(sse), `"instructions":"be brief"`) {
		t.Errorf("stream lacks encrypted_content or instructions")
	}
}

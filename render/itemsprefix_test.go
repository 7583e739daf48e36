package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parallelCalls is a conversation whose assistant turn makes four calls in one generation, so a
// prefix can end inside the open turn (the next turn's calls join it) with room in its ToolCalls.
var parallelCalls = []json.RawMessage{
	json.RawMessage(`{"role":"user","content":"q"}`),
	json.RawMessage(`{"type":"reasoning","content":[{"type":"reasoning_text","text":"r"}]}`),
	json.RawMessage(`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`),
	json.RawMessage(`{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"}`),
	json.RawMessage(`{"type":"function_call","call_id":"c3","name":"f","arguments":"{}"}`),
	json.RawMessage(`{"type":"function_call","call_id":"c4","name":"f","arguments":"{}"}`),
	json.RawMessage(`{"type":"function_call_output","call_id":"c1","output":"o1"}`),
	json.RawMessage(`{"role":"user","content":"next"}`),
}

func storedIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("item_%d", i)
	}
	return ids
}

// TestItemsPrefixResume: a turn that resumes the previous turn's prefix builds the conversation
// a plain mapping builds, for every corpus input, every prefix length and every later stored
// count; the turns built before, and a branch resumed from the same prefix, are left unchanged;
// the prefix is not taken for other instructions, tenant, ids, item lengths or cache.
func TestItemsPrefixResume(t *testing.T) {
	t.Parallel()
	corpus := append(responsesCorpus(t), ResponsesInput{Instructions: "sys", Items: parallelCalls})
	plain := func(in ResponsesInput, items []json.RawMessage) []Message {
		t.Helper()
		in.Items = items
		conv, err := FromResponses(in)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Clone(conv.Messages)
	}
	for ci, base := range corpus {
		if _, err := FromResponses(base); err != nil {
			continue // errors are FromResponses's own tests
		}
		n := len(base.Items)
		ids := storedIDs(n)
		for _, k := range splits(1, n) {
			c := NewItemCache(1 << 20)
			// Turn A: k stored items, the rest its own input.
			a := base
			a.Cache, a.Tenant, a.StoredIDs, a.KeepPrefix = c, "t", ids[:k], true
			convA, err := FromResponses(a)
			if err != nil || convA.Prefix == nil || convA.Prefix.Items() != k {
				t.Fatalf("corpus %d k=%d: prefix %v, err %v", ci, k, convA.Prefix, err)
			}
			wantA := plain(base, base.Items)
			for _, m := range splits(k, n) {
				// Turn B: the same items, m of them stored now.
				b := a
				b.StoredIDs, b.Resume = ids[:m], convA.Prefix
				convB, err := FromResponses(b)
				if err != nil {
					t.Fatal(err)
				}
				if convB.Resumed != k {
					t.Fatalf("corpus %d k=%d m=%d: resumed %d items", ci, k, m, convB.Resumed)
				}
				if d := cmp.Diff(wantA, convB.Messages); d != "" {
					t.Fatalf("corpus %d k=%d m=%d: resumed conversation differs (-want +got):\n%s", ci, k, m, d)
				}
				for what, got := range map[string][]Message{"turn A": convA.Messages, "turn B": convB.Messages} {
					if d := cmp.Diff(wantA, got); d != "" {
						t.Fatalf("corpus %d k=%d m=%d: %s changed by a later turn (-want +got):\n%s", ci, k, m, what, d)
					}
				}
			}
			// A branch from the same prefix: only the stored items and a call of its own.
			br := a
			br.Items = append(slices.Clip(base.Items[:k]), json.RawMessage(`{"type":"function_call","call_id":"cx","name":"g","arguments":"{}"}`))
			br.Resume = convA.Prefix
			convBr, err := FromResponses(br)
			if err != nil || convBr.Resumed != k {
				t.Fatalf("corpus %d k=%d: branch resumed %d (%v)", ci, k, convBr.Resumed, err)
			}
			if d := cmp.Diff(plain(base, br.Items), convBr.Messages); d != "" {
				t.Fatalf("corpus %d k=%d: branch differs (-want +got):\n%s", ci, k, d)
			}
			if d := cmp.Diff(wantA, convA.Messages); d != "" {
				t.Fatalf("corpus %d k=%d: turn A changed by a branch (-want +got):\n%s", ci, k, d)
			}
			// What the prefix must not be taken for.
			other := map[string]func(*ResponsesInput){
				"instructions": func(in *ResponsesInput) { in.Instructions += "x" },
				"tenant":       func(in *ResponsesInput) { in.Tenant = "u" },
				"an id":        func(in *ResponsesInput) { in.StoredIDs = slices.Clone(in.StoredIDs); in.StoredIDs[k-1] += "x" },
				"a length": func(in *ResponsesInput) {
					in.Items = slices.Clone(in.Items)
					in.Items[0] = append(slices.Clone(in.Items[0]), ' ')
				},
				"cache":         func(in *ResponsesInput) { in.Cache = NewItemCache(1 << 20) },
				"fewer stored":  func(in *ResponsesInput) { in.StoredIDs = in.StoredIDs[:k-1] },
				"another order": func(in *ResponsesInput) { in.StoredIDs = slices.Concat([]string{"item_x"}, in.StoredIDs) },
			}
			for what, change := range other {
				b := a
				b.StoredIDs, b.Resume = ids[:k], convA.Prefix
				change(&b)
				if len(b.StoredIDs) > len(b.Items) {
					continue
				}
				conv, err := FromResponses(b)
				if err != nil {
					t.Fatal(err)
				}
				if conv.Resumed != 0 {
					t.Fatalf("corpus %d k=%d: a prefix resumed with another %s", ci, k, what)
				}
				if d := cmp.Diff(plain(b, b.Items), conv.Messages); d != "" {
					t.Fatalf("corpus %d k=%d, other %s: conversation differs (-want +got):\n%s", ci, k, what, d)
				}
			}
		}
	}
}

// splits are the counts from lo to hi a test tries: all of them for a short conversation, the
// ends and a few between for a long one (the agent conversation: every pair would take minutes
// under the race detector).
func splits(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		if hi-lo < 8 || i-lo < 3 || hi-i < 3 || (i-lo)%(1+(hi-lo)/4) == 0 {
			out = append(out, i)
		}
	}
	return out
}

// TestItemsPrefixRetry: a retried turn (the same stored items) hands on the prefix it resumed.
func TestItemsPrefixRetry(t *testing.T) {
	t.Parallel()
	c := NewItemCache(1 << 20)
	in := ResponsesInput{Items: parallelCalls, Cache: c, Tenant: "t", StoredIDs: storedIDs(5), KeepPrefix: true}
	first, err := FromResponses(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Resume = first.Prefix
	again, err := FromResponses(in)
	if err != nil || again.Prefix != first.Prefix || again.Resumed != 5 {
		t.Fatalf("retry: prefix %p (want %p), resumed %d, err %v", again.Prefix, first.Prefix, again.Resumed, err)
	}
}

// TestItemsPrefixConcurrent: turns resuming one prefix at once (a conversation and its
// branches on one pod) each build their own conversation; run with -race.
func TestItemsPrefixConcurrent(t *testing.T) {
	t.Parallel()
	c := NewItemCache(1 << 20)
	ids := storedIDs(len(parallelCalls))
	first, err := FromResponses(ResponsesInput{Items: parallelCalls[:4], Cache: c, Tenant: "t", StoredIDs: ids[:3], KeepPrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := FromResponses(ResponsesInput{Items: parallelCalls})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			in := ResponsesInput{Items: parallelCalls, Cache: c, Tenant: "t", StoredIDs: ids[:3+g%3], Resume: first.Prefix, KeepPrefix: true}
			conv, err := FromResponses(in)
			switch {
			case err != nil:
				errs <- err
			case conv.Resumed != 3:
				errs <- fmt.Errorf("goroutine %d resumed %d items", g, conv.Resumed)
			default:
				if d := cmp.Diff(want.Messages, conv.Messages); d != "" {
					errs <- fmt.Errorf("goroutine %d (-want +got):\n%s", g, d)
					return
				}
				errs <- nil
			}
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

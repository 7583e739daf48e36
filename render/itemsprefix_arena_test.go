package render

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// randomItems returns n Responses items of every kind FromResponses folds (messages of each
// role, reasoning, calls that join an open assistant turn or start one, their outputs), in
// random order, so that a turn's cut can fall inside an open turn or before pending reasoning.
func randomItems(r *rand.Rand, n int) []json.RawMessage {
	items := make([]json.RawMessage, n)
	for i := range items {
		var s string
		switch r.IntN(7) {
		case 0:
			s = fmt.Sprintf(`{"role":"user","content":"u%d"}`, i)
		case 1:
			s = fmt.Sprintf(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a%d"}]}`, i)
		case 2:
			s = fmt.Sprintf(`{"type":"reasoning","content":[{"type":"reasoning_text","text":"r%d"}]}`, i)
		case 3, 4:
			s = fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"f","arguments":"{\"i\":%d}"}`, i, i)
		case 5:
			s = fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":"o%d"}`, i-1, i)
		default:
			s = fmt.Sprintf(`{"role":"developer","content":"d%d"}`, i)
		}
		items[i] = json.RawMessage(s)
	}
	return items
}

// TestItemsPrefixArenaChain: a conversation's turns, each resuming the previous turn's prefix
// (its messages published in a shared arena), prepared several times and with branches beside
// them, build what a plain mapping builds, and no turn changes an earlier turn's conversation.
func TestItemsPrefixArenaChain(t *testing.T) {
	t.Parallel()
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		all := randomItems(r, 60+r.IntN(60))
		ids := storedIDs(len(all))
		c := NewItemCache(1 << 22)
		plain := func(items []json.RawMessage) []Message {
			conv, err := FromResponses(ResponsesInput{Instructions: "sys", Items: items})
			if err != nil {
				t.Fatal(err)
			}
			return slices.Clone(conv.Messages)
		}
		type built struct {
			got  []Message
			want []Message
		}
		var kept []built
		var prefix *ItemsPrefix
		shared, turns := 0, 0
		var prev []Message
		stored := 1 + r.IntN(3)
		for stored < len(all) {
			end := min(len(all), stored+1+r.IntN(4))
			in := ResponsesInput{Instructions: "sys", Items: all[:end], Cache: c, Tenant: "t", StoredIDs: ids[:stored], Resume: prefix, KeepPrefix: true}
			want := plain(in.Items)
			var next *ItemsPrefix
			for rep := range 1 + r.IntN(3) {
				conv, err := FromResponses(in)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, conv.Messages); d != "" {
					t.Fatalf("seed %d stored %d end %d rep %d: differs (-want +got):\n%s", seed, stored, end, rep, d)
				}
				if prefix != nil && conv.Resumed != prefix.Items() {
					t.Fatalf("seed %d stored %d: resumed %d items, prefix has %d", seed, stored, conv.Resumed, prefix.Items())
				}
				if len(prev) > 0 && len(conv.Messages) > 0 && &prev[0] == &conv.Messages[0] {
					shared++
				}
				turns++
				prev = conv.Messages
				kept = append(kept, built{conv.Messages, want})
				next = conv.Prefix
			}
			// A branch beside the turn: the same stored items and other input.
			br := in
			br.Items = append(slices.Clip(all[:stored]), randomItems(r, 1+r.IntN(3))...)
			if conv, err := FromResponses(br); err == nil {
				w := plain(br.Items)
				if d := cmp.Diff(w, conv.Messages); d != "" {
					t.Fatalf("seed %d stored %d: branch differs (-want +got):\n%s", seed, stored, d)
				}
				kept = append(kept, built{conv.Messages, w})
			}
			prefix = next
			stored = min(len(all), end+r.IntN(4)) // the turn's outputs join the stored items
			if stored == end && end == len(all) {
				break
			}
		}
		for i, k := range kept {
			if d := cmp.Diff(k.want, k.got); d != "" {
				t.Fatalf("seed %d: conversation %d changed by a later one (-want +got):\n%s", seed, i, d)
			}
		}
		t.Logf("seed %d: %d of %d turns shared the previous one's messages", seed, shared, turns)
	}
}

// TestItemsPrefixArenaConcurrent: turns resuming one prefix at once, the same turn or branches
// with other items, each build what a plain mapping builds; run with -race.
func TestItemsPrefixArenaConcurrent(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	all := randomItems(r, 40)
	ids := storedIDs(len(all))
	c := NewItemCache(1 << 22)
	first, err := FromResponses(ResponsesInput{Items: all[:20], Cache: c, Tenant: "t", StoredIDs: ids[:18], KeepPrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	inputs := make([][]json.RawMessage, 16)
	wants := make([][]Message, len(inputs))
	for g := range inputs {
		inputs[g] = all[:22+g%3]
		if g%4 == 3 {
			inputs[g] = append(slices.Clip(all[:18]), randomItems(r, 1+g%5)...)
		}
		conv, err := FromResponses(ResponsesInput{Items: inputs[g]})
		if err != nil {
			t.Fatal(err)
		}
		wants[g] = slices.Clone(conv.Messages)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(inputs))
	for g := range inputs {
		wg.Go(func() {
			for range 20 {
				in := ResponsesInput{Items: inputs[g], Cache: c, Tenant: "t", StoredIDs: ids[:min(len(inputs[g]), 20)], Resume: first.Prefix, KeepPrefix: true}
				conv, err := FromResponses(in)
				if err != nil {
					errs[g] = err
					return
				}
				if d := cmp.Diff(wants[g], conv.Messages); d != "" {
					errs[g] = fmt.Errorf("goroutine %d (-want +got):\n%s", g, d)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestEqualMessagesFields: equalMessages compares every field of Message; a field added to
// Message must be added to it (and to this count).
func TestEqualMessagesFields(t *testing.T) {
	if n := reflect.TypeFor[Message]().NumField(); n != 9 {
		t.Fatalf("Message has %d fields; equalMessages compares 9", n)
	}
	s1, s2 := "a", "b"
	base := Message{Role: "assistant", Content: "x", Parts: []Part{{Text: "p"}}, ToolCalls: []ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`"{}"`)}}, Reasoning: &s1}
	changes := map[string]func(m *Message){
		"role":       func(m *Message) { m.Role = "user" },
		"content":    func(m *Message) { m.Content = "y" },
		"parts":      func(m *Message) { m.Parts = []Part{{Text: "q"}} },
		"parts nil":  func(m *Message) { m.Parts = nil },
		"null":       func(m *Message) { m.NullContent = true },
		"calls":      func(m *Message) { m.ToolCalls = []ToolCall{{ID: "2", Name: "f", Arguments: json.RawMessage(`"{}"`)}} },
		"calls nil":  func(m *Message) { m.ToolCalls = nil },
		"arguments":  func(m *Message) { m.ToolCalls = []ToolCall{{ID: "1", Name: "f"}} },
		"reasoning":  func(m *Message) { m.Reasoning = &s2 },
		"reasoning-": func(m *Message) { m.Reasoning = nil },
		"toolCallID": func(m *Message) { m.ToolCallID = &s1 },
		"name":       func(m *Message) { m.Name = &s1 },
		"task":       func(m *Message) { m.Task = &s1 },
		"call type": func(m *Message) {
			m.ToolCalls = []ToolCall{{ID: "1", Type: "function", Name: "f", Arguments: json.RawMessage(`"{}"`)}}
		},
		"call name":   func(m *Message) { m.ToolCalls = []ToolCall{{ID: "1", Name: "g", Arguments: json.RawMessage(`"{}"`)}} },
		"extra calls": func(m *Message) { m.ToolCalls = append(slices.Clip(m.ToolCalls), ToolCall{}) },
	}
	same := base
	s3 := "a"
	same.Reasoning = &s3
	if !equalMessages(&base, &same) {
		t.Fatal("equal values behind other pointers compare unequal")
	}
	for what, change := range changes {
		m := base
		change(&m)
		if equalMessages(&base, &m) || equalMessages(&m, &base) {
			t.Errorf("another %s compares equal", what)
		}
	}
}

// TestItemsPrefixArenaAgent: an agent loop's turns (each the previous turn's reasoning and call
// stored, then the call's output as input) share one array of messages, in place, until its
// room is used up: then one turn copies the history, with room again.
func TestItemsPrefixArenaAgent(t *testing.T) {
	t.Parallel()
	c := NewItemCache(1 << 22)
	items := []json.RawMessage{json.RawMessage(`{"role":"user","content":"task"}`)}
	var prefix *ItemsPrefix
	var prev []Message
	shared, turns := 0, 0
	for turn := range 200 {
		stored := len(items)
		items = append(items,
			json.RawMessage(fmt.Sprintf(`{"type":"reasoning","content":[{"type":"reasoning_text","text":"r%d"}]}`, turn)),
			json.RawMessage(fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"f","arguments":"{}"}`, turn)),
			json.RawMessage(fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":"o%d"}`, turn, turn)))
		if turn > 0 {
			stored += 2 // the previous turn's outputs
		}
		in := ResponsesInput{Instructions: "sys", Items: slices.Clip(items), Cache: c, Tenant: "t", StoredIDs: storedIDs(len(items))[:stored], Resume: prefix, KeepPrefix: true}
		if turn == 0 {
			in.Items, in.StoredIDs = items[:1], in.StoredIDs[:1]
			items = items[:1]
		}
		conv, err := FromResponses(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := FromResponses(ResponsesInput{Instructions: "sys", Items: in.Items})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want.Messages, conv.Messages); d != "" {
			t.Fatalf("turn %d (-want +got):\n%s", turn, d)
		}
		if turn > 0 {
			turns++
			if &prev[0] == &conv.Messages[0] {
				shared++
			}
		}
		prefix, prev = conv.Prefix, conv.Messages
	}
	// Each copy gives room for a quarter of the history (at least 16 messages), and an agent
	// turn adds 2: about one turn in eight copies early on, fewer as the history grows.
	t.Logf("%d of %d turns shared", shared, turns)
	if shared < turns*3/4 {
		t.Errorf("%d of %d turns shared the previous turn's messages", shared, turns)
	}
}

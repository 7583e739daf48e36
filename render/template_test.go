package render

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestSameMessageSeesEveryField: messageValues reuses a message's template value only when
// sameMessage says nothing changed, so a field sameMessage ignores would freeze stale values into
// the prompt. Changing any field, including of a tool call, must make the messages differ.
func TestSameMessageSeesEveryField(t *testing.T) {
	s := func(v string) *string { return &v }
	base := Message{Role: "assistant", Content: "c", Reasoning: s("r"), ToolCallID: s("t"), Name: s("n"),
		ToolCalls: []ToolCall{{ID: "i", Type: "function", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}}
	clone := func() Message {
		m := base
		m.Reasoning, m.ToolCallID, m.Name = s(*base.Reasoning), s(*base.ToolCallID), s(*base.Name)
		m.ToolCalls = []ToolCall{base.ToolCalls[0]}
		return m
	}
	if c := clone(); !sameMessage(&base, &c) {
		t.Fatal("a copy differs")
	}
	mt := reflect.TypeOf(Message{})
	for i := range mt.NumField() {
		c := clone()
		f := reflect.ValueOf(&c).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(f.String() + "x")
		case reflect.Pointer:
			f.Set(reflect.ValueOf(s("changed")))
		case reflect.Bool:
			f.SetBool(!f.Bool())
		case reflect.Slice:
			if mt.Field(i).Name == "Parts" {
				c.Parts = append(c.Parts, Part{Text: "p"})
				break
			}
			// ToolCalls: change each of its fields in turn
			ct := reflect.TypeOf(ToolCall{})
			for j := range ct.NumField() {
				c := clone()
				cf := reflect.ValueOf(&c.ToolCalls[0]).Elem().Field(j)
				if cf.Kind() == reflect.String {
					cf.SetString(cf.String() + "x")
				} else {
					cf.SetBytes(append(cf.Bytes(), ' '))
				}
				if sameMessage(&base, &c) {
					t.Errorf("ToolCall.%s changed but sameMessage reports the same message", ct.Field(j).Name)
				}
			}
			c.ToolCalls = append(c.ToolCalls, c.ToolCalls[0])
		default:
			t.Fatalf("Message.%s: kind %s not covered by this test", mt.Field(i).Name, f.Kind())
		}
		if sameMessage(&base, &c) {
			t.Errorf("Message.%s changed but sameMessage reports the same message", mt.Field(i).Name)
		}
	}
	nilReasoning := clone()
	nilReasoning.Reasoning = nil
	if sameMessage(&base, &nilReasoning) {
		t.Error("absent and present reasoning compare equal")
	}
}

// TestRenderTextMemoCommonPrefix: a render that replayed from the previous turn's memo gives the
// same text as a plain render and knows its common prefix with the previous text.
func TestRenderTextMemoCommonPrefix(t *testing.T) {
	m := qwen3(t)
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "List the files."}}
	var memo *RenderMemo
	var prevText string
	for turn := range 6 {
		req := ChatRequest{Messages: msgs, AddGenerationPrompt: true}
		text, next, err := m.RenderTextMemo(req, memo)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := m.RenderText(req)
		if err != nil {
			t.Fatal(err)
		}
		if text != plain {
			t.Fatalf("turn %d: memo render differs from the plain render", turn)
		}
		want := 0
		if memo != nil {
			want = prefixLen(prevText, text)
		}
		if got := next.CommonPrefix(); got != want {
			t.Fatalf("turn %d: CommonPrefix %d, want %d", turn, got, want)
		}
		memo, prevText = next, text
		id := "call_" + string(rune('a'+turn))
		msgs = append(msgs,
			Message{Role: "assistant", Content: "<think>\nlook\n</think>\n\n", ToolCalls: []ToolCall{{ID: id, Type: "function", Name: "ls", Arguments: []byte(`"{\"dir\": \".\"}"`)}}},
			Message{Role: "tool", Content: "main.go\ngo.mod", ToolCallID: &id})
		if turn%2 == 1 {
			msgs = append(msgs, Message{Role: "user", Content: "And the tests?"})
		}
	}
}

func prefixLen(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// TestRenderTextMemoTools: a memo render reuses the previous render's tools only when they are
// equal; tools changed in place, added or dropped render as a plain render does.
func TestRenderTextMemoTools(t *testing.T) {
	m := qwen3(t)
	msgs := []Message{{Role: "user", Content: "List the files."}}
	d1 := "List a directory."
	tools := []Tool{{Name: "ls", Description: &d1, Parameters: []byte(`{"type":"object"}`)}}
	var memo *RenderMemo
	for i, change := range []func(){
		func() {},
		func() {}, // the same tools again: reused
		func() { d2 := "List files."; tools[0].Description = &d2 }, // changed in place
		func() { tools[0].Parameters = []byte(`{"type":"object","properties":{}}`) },
		func() { tools = append(tools, Tool{Name: "cat"}) },
		func() { tools = nil },
		func() { tools = []Tool{} },
	} {
		change()
		req := ChatRequest{Messages: msgs, Tools: tools, AddGenerationPrompt: true}
		text, next, err := m.RenderTextMemo(req, memo)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := m.RenderText(req)
		if err != nil {
			t.Fatal(err)
		}
		if text != plain {
			t.Fatalf("step %d: memo render differs from the plain render:\n%s\nwant\n%s", i, text, plain)
		}
		memo = next
	}
}

// TestValueCacheTenantScoped: a decoded tools list is kept per tenant, so one tenant's render
// never finds (and cannot time) what another's decoded; the bound holds over all tenants.
func TestValueCacheTenantScoped(t *testing.T) {
	c := newValueCache(3)
	text := []byte(`[{"type":"function","function":{"name":"f"}}]`)
	for _, tenant := range []string{"A", "A", "B"} {
		if _, err := c.get(tenant, text); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.order) != 2 || len(c.m) != 2 || len(c.m["A"]) != 1 || len(c.m["B"]) != 1 {
		t.Fatalf("after A, A, B: %d entries in order, tenants %d", len(c.order), len(c.m))
	}
	for _, tenant := range []string{"C", "D"} {
		if _, err := c.get(tenant, text); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.order) != 3 || c.m["A"] != nil || len(c.m["D"]) != 1 {
		t.Fatalf("bound 3 after five tenants' gets: %d in order, A kept: %v", len(c.order), c.m["A"] != nil)
	}
}

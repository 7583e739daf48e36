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
		case reflect.Slice: // ToolCalls: change each of its fields in turn
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

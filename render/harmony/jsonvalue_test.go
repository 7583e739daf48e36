package harmony

import (
	"testing"

	"github.com/tidwall/gjson"
)

// fieldByForEach is field as gjson's ForEach reads an object: every member parsed, the last
// occurrence of the key kept (Python's json). field must agree with it on every object.
func fieldByForEach(obj gjson.Result, key string) (gjson.Result, bool) {
	if !obj.IsObject() {
		return gjson.Result{}, false
	}
	var found gjson.Result
	ok := false
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			found, ok = v, true
		}
		return true
	})
	return found, ok
}

var fieldSeeds = []string{
	`{"type":"function_call_output","call_id":"c1","output":"a\nb \"q\" \\ \u00e9"}`,
	`{"type":"message","role":"user","content":[{"type":"input_text","text":"x"}]}`,
	`{"t\u0079pe":"reasoning","type":"message"}`,
	`{"type":"a","type":"b"}`,
	` { "type" : 5 , "call_id" :null,"x":{"type":"inner"},"y":[{"type":1},"}"] } `,
	`{"output":{"a":[1,2,{"b":"]"}]},"type":true,"n":-1.5e3,"f":false}`,
	`{}`, `[]`, `"s"`, `{"type":`, `{"a":"\\"}`, `{"a":1`,
}

// TestFieldMatchesForEach: the raw member walk finds what ForEach finds, for present, repeated,
// escaped, nested and absent keys.
func TestFieldMatchesForEach(t *testing.T) {
	for _, s := range fieldSeeds {
		checkField(t, s)
	}
}

func checkField(t *testing.T, s string) {
	t.Helper()
	if !gjson.Valid(s) {
		field(gjson.Parse(s), "type") // must not panic; ForEach's reading of invalid JSON is not a contract
		return
	}
	obj := gjson.Parse(s)
	for _, key := range []string{"type", "call_id", "output", "x", "y", "n", "f", "a", "missing", ""} {
		got, gok := field(obj, key)
		want, wok := fieldByForEach(obj, key)
		if gok != wok || got.Type != want.Type || got.Raw != want.Raw || got.Str != want.Str || got.Num != want.Num {
			t.Fatalf("field(%s, %q) = %v %q (%v), want %v %q (%v)", s, key, got.Type, got.Raw, gok, want.Type, want.Raw, wok)
		}
	}
}

func FuzzField(f *testing.F) {
	for _, s := range fieldSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkField(t, s) })
}

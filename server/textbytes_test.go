package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// gjsonTextBytes is what renderedTextBytes counted before it stopped copying: the reference it
// must agree with on every valid item.
func gjsonTextBytes(item gjson.Result) int64 {
	var n int64
	text := func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			n += int64(len(v.Str))
		case v.IsArray():
			v.ForEach(func(_, part gjson.Result) bool {
				n += int64(len(part.Get("text").Str))
				return true
			})
		}
	}
	switch item.Get("type").Str {
	case "message":
		text(item.Get("content"))
	case "function_call":
		n += int64(len(item.Get("arguments").Str))
	case "function_call_output":
		text(item.Get("output"))
	case "reasoning":
		text(item.Get("summary"))
		text(item.Get("content"))
	}
	return n
}

var textBytesItems = []struct {
	name, item string
	want       int64
}{
	{"message string", `{"type":"message","role":"user","content":"hello"}`, 5},
	{"message parts", `{"type":"message","content":[{"type":"input_text","text":"ab"},{"type":"input_image","image_url":"x"},{"text":"cde"}]}`, 5},
	{"escapes", `{"type":"message","content":"a\nb\"c\\d\/e\u00e9\u4e2d\ud83d\ude00"}`, 9 + 2 + 3 + 4},
	{"lone surrogate", `{"type":"message","content":"\ud800x\udc00"}`, 3 + 1 + 3},
	{"high then non-low", `{"type":"message","content":"\ud800\u0041"}`, 3 + 1},
	{"function_call", `{"type":"function_call","name":"f","arguments":"{\"a\":1}"}`, 7},
	{"function_call_output string", `{"id":"x","type":"function_call_output","call_id":"c","output":"out put"}`, 7},
	{"function_call_output parts", `{"type":"function_call_output","output":[{"type":"input_text","text":"xy"}]}`, 2},
	{"reasoning", `{"type":"reasoning","summary":[{"type":"summary_text","text":"sum"}],"content":[{"type":"reasoning_text","text":"think"}]}`, 8},
	{"first of a repeated key", `{"type":"message","content":"ab","content":"abcdef"}`, 2},
	{"repeated type", `{"type":"reasoning","type":"message","summary":"abc"}`, 3},
	{"escaped key and type", `{"t\u0079pe":"mess\u0061ge","content":"abc"}`, 3},
	{"non-string type", `{"type":1,"content":"abc"}`, 0},
	{"unknown type", `{"type":"item_reference","id":"abc"}`, 0},
	{"non-string content", `{"type":"message","content":{"text":"abc"}}`, 0},
	{"non-string text", `{"type":"message","content":[{"text":5},"abc",["x"],{"text":null},{"text":"ok"}]}`, 2},
	{"nested values skipped", `{"a":{"b":[1,2,{"c":"}\"]"}]},"type" : "message" , "content" : [ { "x" : [ "]" ] , "text" : "yz" } ] }`, 2},
	{"whitespace", " {\n\t\"type\" :\r\n \"function_call\",\"arguments\":\"abc\"}\n", 3},
	{"not an object", `["type","message"]`, 0},
}

func TestRenderedTextBytes(t *testing.T) {
	for _, tc := range textBytesItems {
		t.Run(tc.name, func(t *testing.T) {
			if !json.Valid([]byte(tc.item)) {
				t.Fatalf("invalid test item %s", tc.item)
			}
			if ref := gjsonTextBytes(gjson.Parse(tc.item)); ref != tc.want {
				t.Fatalf("reference counts %d, the case wants %d", ref, tc.want)
			}
			if got := renderedTextBytes([]byte(tc.item)); got != tc.want {
				t.Errorf("renderedTextBytes = %d, want %d", got, tc.want)
			}
		})
	}
}

func FuzzRenderedTextBytes(f *testing.F) {
	for _, tc := range textBytesItems {
		f.Add(tc.item)
	}
	f.Add(`{"type":"message","content":"` + strings.Repeat(`x\n`, 100) + `"}`)
	f.Fuzz(func(t *testing.T, item string) {
		if !json.Valid([]byte(item)) {
			return
		}
		if got, want := renderedTextBytes([]byte(item)), gjsonTextBytes(gjson.Parse(item)); got != want {
			t.Errorf("renderedTextBytes(%s) = %d, gjson counts %d", item, got, want)
		}
	})
}

func BenchmarkRenderedTextBytes(b *testing.B) {
	item := []byte(`{"type":"function_call_output","call_id":"call_1","output":"` +
		strings.Repeat(`\tif err := check(ctx, \"tool output\"); err != nil {\n\t\treturn err\n\t}\n`, 300) + `"}`)
	b.SetBytes(int64(len(item)))
	b.ReportAllocs()
	for b.Loop() {
		renderedTextBytes(item)
	}
}

package server

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestJSONObjectGet: a member looked up in the index is what gjson's Get finds in the object:
// present, absent, null, repeated (the first), escaped keys, gjson paths, and non-objects.
func TestJSONObjectGet(t *testing.T) {
	keys := []string{"model", "input", "store", "stream", "absent", "", "a.b", "tools.0.name", "t*ls", "dup", "esc", "es\\c", "#"}
	for _, body := range []string{
		`{}`,
		`{"model":"m","input":[{"type":"message","content":"hi"}],"store":false,"stream":null}`,
		`{"dup":1,"dup":2,"model":"m"}`,
		`{"a":{"b":3},"a.b":4,"tools":[{"name":"x"}]}`,
		`{"e\u0073c":"escaped","esc":"plain","":"empty"}`,
		`[1,2,3]`, `"str"`, `null`,
	} {
		root := gjson.Parse(body)
		o := objectOf(root)
		for _, k := range keys {
			if got, want := o.Get(k), root.Get(k); got.Raw != want.Raw || got.Exists() != want.Exists() || got.Type != want.Type {
				t.Errorf("%s: Get(%q) = %s (exists %v), gjson's %s (exists %v)", body, k, got.Raw, got.Exists(), want.Raw, want.Exists())
			}
		}
	}
}

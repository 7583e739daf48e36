package render

import (
	"math/rand/v2"
	"testing"

	"github.com/tidwall/gjson"
)

// jsonEdgeCases are inputs where a JSON reader is easy to get wrong; both fuzz targets below
// start from them.
var jsonEdgeCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, ` {"a" : [1, {"b": "c"}] } `, `{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`,
	`{,}`, `[,1]`, `"x"`, `"x" "y"`, `1`, `-`, `-0`, `01`, `1.`, `1.5e`, `1e+`, `1E-7`, `-0.0e0`,
	`tru`, `true`, `truex`, `nul`, `null`, `nan`, `NaN`, `[true,false,null]`, `{"a":tru}`,
	`"\u00e9\ud83d\ude00\ud800\udc00\ud800x\udc00\ud800\u0041"`, `"\ud83d\ud83d\ude00"`, `"\u12"`, `"\u12G4"`,
	`"\x"`, `"\/\b\f\n\r\t\"\\"`, "\"a\x01b\"", "\"a\x7fb\"", "\"\xff\xfe\"", `"\\\"\\"`, `"abc`, `"abc\"`,
	`{"t\u0079pe":"x","type":"y"}`, `{"type":"a","type":"b"}`, `{"a\\":1,"a":2}`, `{"a":"\\","b":"\\\""}`,
	`[{"type":"input_text","text":"a\"b\\"},{"text":"x","type":5}]`, "{\"a\":\t[\r\n]}",
	`{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\"b"}`,
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range jsonEdgeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), gjson.ValidBytes(b); got != want {
			t.Fatalf("validJSON(%q) = %v, gjson.ValidBytes = %v", b, got, want)
		}
	})
}

// FuzzItemJSON checks lookup (alone and during validation), elems, str and text against gjson's
// Get, ForEach, Str and String on valid JSON, descending into nested values.
func FuzzItemJSON(f *testing.F) {
	for _, s := range jsonEdgeCases {
		f.Add([]byte(s), "type")
	}
	f.Add([]byte(`{"a":{"b":[1,"x",{"c":null}]},"b":"\u0062"}`), "b")
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		if !gjson.ValidBytes(b) {
			return
		}
		if !isPlainKey(key) {
			return // a gjson path, not a plain key
		}
		checkJSONVal(t, jsonVal(b[skipWS(b, 0):]), gjson.ParseBytes(b), key, 0)
		var vals [1]jsonVal
		validItem(b, &memberSet{keys: []string{key}, vals: vals[:]})
		if r := gjson.ParseBytes(b); r.IsObject() {
			sameValue(t, vals[0], r.Get(key), "validItem "+key)
		}
	})
}

// isPlainKey reports a key that gjson's Get reads as one member name.
func isPlainKey(key string) bool {
	if key == "" {
		return false
	}
	for _, c := range []byte(key) {
		switch c {
		case '.', '|', '*', '?', '\\', '#', '@', '!', '[', ']', '{', '}', '(', ')', '=', '<', '>', '%', ',', ':', '"':
			return false
		}
	}
	return true
}

func checkJSONVal(t *testing.T, v jsonVal, r gjson.Result, key string, depth int) {
	t.Helper()
	if depth > 4 {
		return
	}
	if v.isObject() {
		var vals [1]jsonVal
		v.lookup([]string{key}, vals[:])
		sameValue(t, vals[0], r.Get(key), "lookup "+key)
	}
	var elems []jsonVal
	for e := range v.elems() {
		elems = append(elems, e)
	}
	var want []gjson.Result
	if r.IsArray() {
		r.ForEach(func(_, e gjson.Result) bool { want = append(want, e); return true })
	}
	if len(elems) != len(want) {
		t.Fatalf("elems of %s: %d, gjson %d", v, len(elems), len(want))
	}
	for i := range elems {
		sameValue(t, elems[i], want[i], "elem")
		checkJSONVal(t, elems[i], want[i], key, depth+1)
	}
	if r.IsObject() {
		seen := map[string]bool{}
		r.ForEach(func(k, e gjson.Result) bool {
			if !seen[k.Str] { // lookup finds the first member of a name
				seen[k.Str] = true
				var vals [1]jsonVal
				v.lookup([]string{k.Str}, vals[:])
				sameValue(t, vals[0], e, "member "+k.Str)
				checkJSONVal(t, vals[0], e, key, depth+1)
			}
			return true
		})
	}
}

// sameValue checks that v is the value gjson found: same text, type, string and String().
func sameValue(t *testing.T, v jsonVal, r gjson.Result, what string) {
	t.Helper()
	if v.exists() != r.Exists() || string(v) != r.Raw {
		t.Fatalf("%s: got %q (exists %v), gjson %q (exists %v)", what, v, v.exists(), r.Raw, r.Exists())
	}
	if v.isString() != (r.Type == gjson.String) || v.isNullish() != (r.Type == gjson.Null) {
		t.Fatalf("%s: %q typed differently from gjson's %v", what, v, r.Type)
	}
	if v.str() != r.Str || v.text() != r.String() {
		t.Fatalf("%s: %q reads as %q / %q, gjson %q / %q", what, v, v.str(), v.text(), r.Str, r.String())
	}
}

func TestUnescapeMatchesGJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{`a`, `é`, `\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u0041`, `\u00e9`, `\ud83d`,
		`\ude00`, `\ud83d\ude00`, `\uDBFF\uDFFF`, `\uffff`, "\xff", `xxxxxxxxxxxxxxxxxxxx`}
	for range 5000 {
		body := ""
		for n := rng.IntN(20); n > 0; n-- {
			body += pieces[rng.IntN(len(pieces))]
		}
		want := gjson.Parse(`"` + body + `"`).Str
		if got := jsonVal(`"` + body + `"`).str(); got != want {
			t.Fatalf("str of %q = %q, gjson %q", body, got, want)
		}
	}
}

package server

import (
	"strings"

	"github.com/tidwall/gjson"
)

// jsonObject is a JSON object whose members are looked up by key after one pass over it. gjson's
// Get scans an object from its start for every key asked (all of it for an absent key), and a
// request is asked some forty keys, most of them absent, past input items that reach tens of
// kilobytes in a long agent turn: that scanning was most of parseRequest.
type jsonObject struct {
	gjson.Result
	members map[string]gjson.Result // nil when Result is not an object
}

// objectOf indexes v's members (first of a repeated key, as gjson's Get finds).
func objectOf(v gjson.Result) jsonObject {
	o := jsonObject{Result: v}
	if !v.IsObject() {
		return o
	}
	o.members = make(map[string]gjson.Result, 16)
	v.ForEach(func(k, val gjson.Result) bool {
		if _, seen := o.members[k.Str]; !seen {
			o.members[k.Str] = val
		}
		return true
	})
	return o
}

// Get returns the member named key, as v.Get(key) does; a gjson path (a key with any of its
// special characters) is resolved by gjson.
func (o jsonObject) Get(key string) gjson.Result {
	if o.members == nil || strings.ContainsAny(key, `.*?|#@\!`) {
		return o.Result.Get(key)
	}
	return o.members[key]
}

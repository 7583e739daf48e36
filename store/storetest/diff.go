package storetest

import (
	"reflect"

	"github.com/google/go-cmp/cmp"
)

// cmpDiff is cmp.Diff with a reflect.DeepEqual fast path: cmp walks large id
// slices element by element with its reporter, which takes seconds under the
// race detector for 100k-id checkpoints.
func cmpDiff(want, got any, opts ...cmp.Option) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, opts...)
}

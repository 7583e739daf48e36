package server

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadAll checks that a body comes back whole whatever length it declared.
func TestReadAll(t *testing.T) {
	body := strings.Repeat("0123456789", 3000)
	for _, tc := range []struct {
		name string
		hint int64
	}{
		{"unknown", -1}, {"zero", 0}, {"exact", int64(len(body))}, {"short", 100}, {"long", 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(iotest.HalfReader(strings.NewReader(body)), tc.hint)
			if err != nil || !bytes.Equal(got, []byte(body)) {
				t.Errorf("readAll = %d bytes, %v; want %d bytes", len(got), err, len(body))
			}
		})
	}
	if _, err := readAll(iotest.ErrReader(iotest.ErrTimeout), 10); err != iotest.ErrTimeout {
		t.Errorf("readAll of a failing reader: err %v, want %v", err, iotest.ErrTimeout)
	}
}

package stack

import "testing"

// TestServeMaxModelLen: --max-model-len wins for every model, also one /v1/models does not list
// (it was keyed by "" and dropped); without it the upstream's length, else 32768.
func TestServeMaxModelLen(t *testing.T) {
	reported := map[string]int{"listed": 40960}
	for _, tt := range []struct {
		override int
		name     string
		want     int
		ok       bool
	}{
		{0, "listed", 40960, true},
		{0, "unlisted", 32768, false},
		{8192, "listed", 8192, true},
		{8192, "unlisted", 8192, true},
	} {
		if got, ok := modelMaxLen(tt.override, reported, tt.name); got != tt.want || ok != tt.ok {
			t.Errorf("modelMaxLen(%d, %s) = %d, %v; want %d, %v", tt.override, tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if got, _ := modelMaxLen(8192, nil, "any"); got != 8192 {
		t.Errorf("upstream unreachable: modelMaxLen = %d, want the override", got)
	}
}

package pyfmt

import (
	"math"
	"testing"
)

// The expected texts are CPython 3.11's repr(float) and float(str).
func TestFloatRepr(t *testing.T) {
	for _, tt := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {-2.5, "-2.5"}, {0.1, "0.1"},
		{1e16, "1e+16"}, {1e15, "1000000000000000.0"}, {123456789012345678, "1.2345678901234568e+17"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {1.5e-7, "1.5e-07"}, {1e100, "1e+100"},
		{math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"},
	} {
		if got := FloatRepr(tt.f); got != tt.want {
			t.Errorf("FloatRepr(%v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}

func TestParseFloat(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true}, {"  -2 ", -2, true}, {"\x1c3\x1f", 3, true}, {"\u30004\u2009", 4, true},
		{"1_000.5", 1000.5, true}, {"1__0", 0, false}, {"_1", 0, false}, {"1_", 0, false}, {"1_.5", 0, false},
		{"+-1", 0, false}, {"--1", 0, false}, {"0x10", 0, false}, {"0x1p-2", 0, false}, {"", 0, false}, {"  ", 0, false},
		{"Infinity", math.Inf(1), true}, {"-inf", math.Inf(-1), true}, {"1e400", math.Inf(1), true},
		{".5", 0.5, true}, {"1.e2", 100, true}, {"1e", 0, false}, {"abc", 0, false},
	} {
		got, ok := ParseFloat(tt.s)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v, %v", tt.s, got, ok, tt.want, tt.ok)
		}
	}
	if f, ok := ParseFloat("NaN"); !ok || !math.IsNaN(f) {
		t.Errorf("ParseFloat(NaN) = %v, %v", f, ok)
	}
}

func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"1.5", "1_0", "-inf", "0x1p3", " 2 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := ParseFloat(s); ok && !math.IsNaN(v) {
			if back, ok := ParseFloat(FloatRepr(v)); !ok || back != v {
				t.Errorf("ParseFloat(FloatRepr(%v)) = %v, %v", v, back, ok)
			}
		}
	})
}

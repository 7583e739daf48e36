package server

import "testing"

func TestOpensThink(t *testing.T) {
	for _, tt := range []struct {
		prompt string
		want   bool
	}{
		{"<|im_start|>assistant\n<think>\n", true},
		{"<|im_start|>assistant\n<think>", true},
		{"<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
		{"<|im_start|>assistant\n", false},
		{"<think>\nplan</think>\n<|im_start|>assistant\n", false},
		{"<think>x", false},
		{"", false},
		{"<think> \u00a0\n", true}, // Unicode white space, as strings.TrimSpace saw it
	} {
		if got := opensThink(tt.prompt); got != tt.want {
			t.Errorf("opensThink(%q) = %v, want %v", tt.prompt, got, tt.want)
		}
	}
}

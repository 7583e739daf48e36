package jinja

import (
	"errors"
	"testing"
)

func TestErrorKindAndLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		kind      Kind
		line      int
		parse     bool // the error comes from Parse
	}{
		{"undefined attr", "a\nb\n{{ x.y }}", KindUndefined, 3, false},
		{"raise", "{% if true %}\n  {{ raise_exception('boom') }}\n{% endif %}", KindTemplate, 2, false},
		{"syntax", "line1\n{% if %}", KindSyntax, 2, true},
		{"unclosed block", "{% for x in y %}\n\n", KindSyntax, 2, true},
		{"unknown filter", "\n\n{{ 1 | nope }}", KindAssertion, 3, true},
		{"type in loop", "{% for m in [1] %}\n{{ m + 'a' }}\n{% endfor %}", KindType, 2, false},
		{"security", "{{ [].append(1) }}", KindSecurity, 1, false},
		{"fuel", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", KindFuel, 1, false},
		{"macro body", "{% macro m() %}\n{{ 1 // 0 }}\n{% endmacro %}\n{{ m() }}", KindZeroDivision, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tpl, err := Parse("tpl", tt.src, Options{Fuel: 1_000_000})
			if err == nil {
				if tt.parse {
					t.Fatalf("Parse(%q) succeeded, want error", tt.src)
				}
				_, err = tpl.Execute(nil)
			} else if !tt.parse {
				t.Fatalf("Parse(%q) = %v, want success", tt.src, err)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error = %v (%T), want *Error", err, err)
			}
			if e.Kind != tt.kind || e.Line != tt.line || e.Name != "tpl" {
				t.Fatalf("error = %q (kind %v line %d), want kind %v line %d", e.Error(), e.Kind, e.Line, tt.kind, tt.line)
			}
		})
	}
}

func TestSentinels(t *testing.T) {
	t.Parallel()
	tpl, err := Parse("s", "{{ raise_exception('x') }}", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.Execute(nil)
	if !errors.Is(err, ErrRaised) || errors.Is(err, ErrSyntax) {
		t.Fatalf("errors.Is(%v, ErrRaised) = false or matches ErrSyntax", err)
	}
	if _, err := Parse("s", "{% if %}", Options{}); !errors.Is(err, ErrSyntax) {
		t.Fatalf("errors.Is(%v, ErrSyntax) = false", err)
	}
}

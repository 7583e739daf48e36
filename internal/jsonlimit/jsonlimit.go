// Package jsonlimit bounds JSON nesting before anything parses it recursively.
//
// gjson's validator (and every recursive-descent JSON parser) uses one stack frame per level of
// nesting: a body of a few million '[' exhausts the goroutine stack, which is a fatal error no
// recover can catch. CheckDepth walks the bytes once with a counter instead of recursion, so it
// costs O(len) time and O(1) memory whatever the input, and callers run it first on every JSON
// value that came from outside the process (request bodies, upstream bodies, stored values).
package jsonlimit

import (
	"errors"
	"fmt"
)

// DefaultMaxDepth is the nesting stitch accepts by default: deep enough for any tool schema seen
// in practice (each JSON-Schema level is two or three JSON levels), far below where a recursive
// parser's stack becomes a cost.
const DefaultMaxDepth = 128

// ErrTooDeep is wrapped by the error CheckDepth returns for input nested beyond its bound.
var ErrTooDeep = errors.New("JSON nested too deeply")

// DepthError reports where the bound was crossed.
type DepthError struct {
	MaxDepth int
	Offset   int // byte offset of the bracket that went one level too deep
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("%v: more than %d levels of arrays and objects (at byte %d)", ErrTooDeep, e.MaxDepth, e.Offset)
}

// Unwrap returns ErrTooDeep.
func (e *DepthError) Unwrap() error { return ErrTooDeep }

// CheckDepth returns a *DepthError when data nests arrays and objects more than maxDepth levels
// deep, else nil. It does not validate: brackets inside strings are skipped (escapes honoured) and
// everything else is left to the parser that runs next, now on input of bounded depth. A
// maxDepth below 1 is treated as DefaultMaxDepth.
func CheckDepth(data []byte, maxDepth int) error {
	if maxDepth < 1 {
		maxDepth = DefaultMaxDepth
	}
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			// Skip the string: find the closing quote that is not escaped.
			for i++; i < len(data); i++ {
				c := data[i]
				if c == '\\' {
					i++
					continue
				}
				if c == '"' {
					break
				}
			}
		case '[', '{':
			depth++
			if depth > maxDepth {
				return &DepthError{MaxDepth: maxDepth, Offset: i}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// CheckDepthString is CheckDepth for a string.
func CheckDepthString(s string, maxDepth int) error {
	if maxDepth < 1 {
		maxDepth = DefaultMaxDepth
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s); i++ {
				c := s[i]
				if c == '\\' {
					i++
					continue
				}
				if c == '"' {
					break
				}
			}
		case '[', '{':
			depth++
			if depth > maxDepth {
				return &DepthError{MaxDepth: maxDepth, Offset: i}
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

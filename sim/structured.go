package sim

import (
	"math/rand/v2"
	"strings"

	"github.com/tidwall/gjson"
)

// constraint is a request's structured-outputs constraint (vLLM's StructuredOutputsParams): the
// answer is written to satisfy it. kind is "" when the request has none.
type constraint struct {
	kind    string       // json, regex, choice, grammar, json_object, structural_tag
	schema  gjson.Result // kind json: the JSON schema
	choices []string     // kind choice
}

// constraintKinds are StructuredOutputsParams' mutually exclusive fields, in declaration order
// (vllm/sampling_params.py at vLLM commit 00388f6573ccfcffad607b8c9ecdf341a4669ceb).
var constraintKinds = [...]string{"json", "regex", "choice", "grammar", "json_object", "structural_tag"}

// parseConstraint reads structured_outputs with vLLM's rule: exactly one constraint field must be
// set (not None); two or none is a 400. The messages are vLLM's; the trailing field dump is
// written in Python's dict notation from the request's own fields, close to but not byte-equal
// with vLLM's (which lists every dataclass field).
func parseConstraint(v gjson.Result) (constraint, *apiError) {
	var c constraint
	if !v.Exists() || v.Type == gjson.Null {
		return c, nil
	}
	if !v.IsObject() {
		return c, badRequest("structured_outputs", "structured_outputs must be an object")
	}
	n := 0
	for _, k := range constraintKinds {
		f := v.Get(k)
		if !f.Exists() || f.Type == gjson.Null {
			continue
		}
		n++
		c.kind = k
		switch k {
		case "json":
			c.schema = f
			if f.Type == gjson.String {
				c.schema = gjson.Parse(f.String())
			}
		case "choice":
			if !f.IsArray() {
				return c, badRequest("structured_outputs", "structured_outputs.choice must be a list of strings")
			}
			for _, x := range f.Array() {
				c.choices = append(c.choices, x.String())
			}
		}
	}
	switch {
	case n > 1:
		return constraint{}, badRequest("", "You can only use one kind of structured outputs constraint but multiple are specified: %s", pyDict(v))
	case n < 1:
		return constraint{}, badRequest("", "You must use one kind of structured outputs constraint but none are specified: %s", pyDict(v))
	}
	return c, nil
}

// pyDict writes a JSON object's members as Python's repr of a dict would.
func pyDict(v gjson.Result) string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	v.ForEach(func(k, x gjson.Result) bool {
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString("'" + k.String() + "': ")
		switch x.Type {
		case gjson.Null:
			b.WriteString("None")
		case gjson.True:
			b.WriteString("True")
		case gjson.False:
			b.WriteString("False")
		case gjson.String:
			b.WriteString("'" + x.String() + "'")
		default:
			b.WriteString(x.Raw)
		}
		return true
	})
	b.WriteByte('}')
	return b.String()
}

// constrainedAnswer returns the text the model writes under c: a value valid for the JSON schema
// (written as Qwen3 writes JSON), an object for json_object, one of the choices. A regex, grammar
// or structural tag is not interpreted; the answer stays prose (reported by ok false).
func constrainedAnswer(c constraint, r *rand.Rand, userText string) (string, bool) {
	var b strings.Builder
	switch c.kind {
	case "json":
		w := &argWriter{b: &b, r: r, names: capitalizedWords(userText)}
		w.value(c.schema, 0)
	case "json_object":
		b.WriteString(`{"answer": `)
		writePyJSONString(&b, fillerWords[r.IntN(len(fillerWords))])
		b.WriteByte('}')
	case "choice":
		if len(c.choices) == 0 {
			return "", false
		}
		b.WriteString(c.choices[r.IntN(len(c.choices))])
	default:
		return "", false
	}
	return b.String(), true
}

// applyConstraint replaces the answer part of a scripted answer with a constrained one. A chat
// answer keeps its think block: vLLM with a reasoning parser constrains only what follows it.
func applyConstraint(answer string, c constraint, r *rand.Rand, userText string) string {
	if c.kind == "" {
		return answer
	}
	ans, ok := constrainedAnswer(c, r, userText)
	if !ok {
		return answer
	}
	if i := strings.Index(answer, "</think>\n\n"); i >= 0 {
		return answer[:i+len("</think>\n\n")] + ans
	}
	return ans
}

package server

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/stream"
)

// allowedTools is tool_choice {type:"allowed_tools", mode, tools}: the subset of tools the model is
// offered (only they reach the chat template) and may call (the output parser drops the rest).
type allowedTools struct {
	names map[string]bool // function names (top-level or inside a namespace)
	types map[string]bool // hosted tool types (web_search, …): kept in tools, never executed
	// offered is the request's tools array restricted to the allowed ones, order and spelling kept.
	offered json.RawMessage
}

// parseAllowedTools reads tool_choice.tools against the request's tools. Every function it names
// must be one of tools; hosted types are matched by type.
func parseAllowedTools(list gjson.Result, tools json.RawMessage) (*allowedTools, error) {
	if !list.IsArray() || len(list.Array()) == 0 {
		return nil, badRequest("tool_choice.tools", "Invalid 'tool_choice.tools': expected a non-empty array of tools.")
	}
	a := &allowedTools{names: map[string]bool{}, types: map[string]bool{}}
	for i, t := range list.Array() {
		p := fmt.Sprintf("tool_choice.tools[%d]", i)
		typ := t.Get("type")
		if !t.IsObject() || typ.Type != gjson.String || typ.Str == "" {
			return nil, badRequest(p+".type", "Missing required parameter: '%s.type'.", p)
		}
		if typ.Str != "function" {
			a.types[typ.Str] = true
			continue
		}
		name := t.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return nil, badRequest(p+".name", "Missing required parameter: '%s.name'.", p)
		}
		if !hasFunctionTool(tools, name.Str) {
			return nil, badRequest(p+".name", "Tool '%s' in '%s' not found in 'tools' parameter.", name.Str, p)
		}
		a.names[name.Str] = true
	}
	offered, err := a.filter(tools)
	if err != nil {
		return nil, badRequest("tools", "Invalid 'tools': %v", err)
	}
	a.offered = offered
	return a, nil
}

// filter returns tools without the tools a does not allow; a namespace keeps its allowed
// functions only, and goes when none is left.
func (a *allowedTools) filter(tools json.RawMessage) (json.RawMessage, error) {
	out := []byte{'['}
	n := 0
	add := func(raw []byte) {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, raw...)
		n++
	}
	var err error
	gjson.ParseBytes(tools).ForEach(func(_, t gjson.Result) bool {
		switch typ := t.Get("type").Str; typ {
		case "function":
			if a.names[t.Get("name").Str] {
				add([]byte(t.Raw))
			}
		case "namespace":
			inner := []byte{'['}
			kept, all := 0, 0
			t.Get("tools").ForEach(func(_, f gjson.Result) bool {
				all++
				if a.names[f.Get("name").Str] {
					if kept > 0 {
						inner = append(inner, ',')
					}
					inner = append(inner, f.Raw...)
					kept++
				}
				return true
			})
			switch {
			case kept == all && kept > 0:
				add([]byte(t.Raw))
			case kept > 0:
				var ns []byte
				if ns, err = sjson.SetRawBytes([]byte(t.Raw), "tools", append(inner, ']')); err != nil {
					return false
				}
				add(ns)
			}
		default:
			if a.types[typ] {
				add([]byte(t.Raw))
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	return append(out, ']'), nil
}

// offeredTools is the tools array the chat template sees: none under tool_choice "none", the
// allowed ones under allowed_tools, else every tool.
func offeredTools(req *request) json.RawMessage {
	switch {
	case req.ToolChoice.Mode == "none":
		return nil // the model is not told about tools it may not call
	case req.ToolChoice.Allowed != nil:
		return req.ToolChoice.Allowed.offered
	}
	return req.Tools
}

// withToolPolicy wraps the converter's output parser so that calls the request does not allow
// (a function outside allowed_tools, or beyond max_tool_calls) are dropped whole, as the parser
// itself drops the calls after the first when parallel_tool_calls is false. opts is returned
// unchanged when the request sets no policy.
func withToolPolicy(opts stream.ConverterOptions, req *request) stream.ConverterOptions {
	p := &policyParser{max: req.MaxToolCalls}
	if req.ToolChoice.Allowed != nil {
		p.allowed = req.ToolChoice.Allowed.names
	}
	if p.allowed == nil && p.max < 0 {
		return opts
	}
	p.inner = opts.Output
	opts.Output = p
	return opts
}

// policyParser filters an OutputParser's tool calls.
type policyParser struct {
	inner    stream.OutputParser
	allowed  map[string]bool // nil: every name
	max      int             // -1: no bound
	calls    int
	dropping bool // inside a call being dropped
}

var _ stream.OutputParser = (*policyParser)(nil)

func (p *policyParser) Append(dst []stream.Piece, id uint32) []stream.Piece {
	n := len(dst)
	return p.filter(p.inner.Append(dst, id), n)
}

func (p *policyParser) Finish(dst []stream.Piece) []stream.Piece {
	n := len(dst)
	return p.filter(p.inner.Finish(dst), n)
}

func (p *policyParser) Ended() bool { return p.inner.Ended() }

// filter removes, in place, the pieces of dropped calls among dst[from:].
func (p *policyParser) filter(dst []stream.Piece, from int) []stream.Piece {
	w := from
	for _, pc := range dst[from:] {
		switch pc.Kind {
		case stream.PieceToolCall:
			ok := (p.allowed == nil || p.allowed[pc.Text]) && (p.max < 0 || p.calls < p.max)
			p.dropping = !ok
			if ok {
				p.calls++
			}
		case stream.PieceArguments:
		case stream.PieceToolCallDone:
			if p.dropping {
				p.dropping = false
				continue
			}
		default:
			p.dropping = false
		}
		if p.dropping {
			continue
		}
		dst[w] = pc
		w++
	}
	return dst[:w]
}

package sim

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// xmlToolsOpen starts the tool definitions the Qwen3-Coder (and Qwen3.5/3.6) chat templates
// write: XML elements instead of JSON lines.
const xmlToolsOpen = "<tools>\n<function>\n<name>"

// parseXMLTools reads the Qwen3-Coder templates' tool block back into tool specs:
//
//	<tools>
//	<function>
//	<name>NAME</name>
//	<description>…</description>
//	<parameters>
//	<parameter>
//	<name>P</name>
//	<type>T</type>
//	<description>…</description>
//	<enum>["a", "b"]</enum>      (any other schema key: JSON, or a plain value)
//	</parameter>
//	…
//	<required>["P"]</required>
//	</parameters>
//	</function>
//	</tools>
//
// Each parameter becomes a property of an object schema (its type when it is a single JSON type
// name, its other keys when their value is JSON), so the scripted model's arguments follow the
// same rules as for a JSON schema (enum.0, default, items). No block: nil.
func parseXMLTools(system string) []toolSpec {
	i := strings.Index(system, xmlToolsOpen)
	if i < 0 {
		return nil
	}
	block, _, _ := strings.Cut(system[i+len("<tools>"):], "\n</tools>")
	var tools []toolSpec
	for _, fn := range strings.Split(block, "\n<function>\n")[1:] {
		fn, _, _ = strings.Cut(fn, "\n</function>")
		name, ok := xmlElement(fn, "name")
		if !ok || name == "" {
			continue
		}
		var schema []byte
		schema = append(schema, `{"type": "object", "properties": {`...)
		_, params, _ := strings.Cut(fn, "<parameters>")
		for n, p := range strings.Split(params, "\n<parameter>\n")[1:] {
			p, _, _ = strings.Cut(p, "\n</parameter>")
			pname, ok := xmlElement(p, "name")
			if !ok {
				continue
			}
			if n > 0 {
				schema = append(schema, ", "...)
			}
			schema = jsonappend.String(schema, pname)
			schema = append(schema, ": {"...)
			first := true
			for line := range strings.Lines(p) {
				key, val, ok := xmlLine(line)
				if !ok || key == "name" || key == "description" {
					continue
				}
				raw, ok := xmlSchemaValue(key, val)
				if !ok {
					continue
				}
				if !first {
					schema = append(schema, ", "...)
				}
				first = false
				schema = jsonappend.String(schema, key)
				schema = append(schema, ": "...)
				schema = append(schema, raw...)
			}
			schema = append(schema, '}')
		}
		schema = append(schema, "}}"...)
		tools = append(tools, toolSpec{name: name, params: gjson.ParseBytes(schema)})
	}
	return tools
}

// xmlSchemaValue returns a parameter line's value as JSON. The template writes mappings and lists
// as JSON (tojson) and anything else with Python's str: True, False and None are JSON's literals
// there, and a default or const that is not JSON is a string.
func xmlSchemaValue(key, val string) ([]byte, bool) {
	switch {
	case key == "type":
		return jsonappend.String(nil, val), isJSONTypeName(val)
	case gjson.Valid(val):
		return []byte(val), true
	case val == "True":
		return []byte("true"), true
	case val == "False":
		return []byte("false"), true
	case val == "None":
		return []byte("null"), true
	case key == "default" || key == "const":
		return jsonappend.String(nil, val), true
	}
	return nil, false
}

// xmlElement returns the text of the first <tag>…</tag> in s.
func xmlElement(s, tag string) (string, bool) {
	_, rest, ok := strings.Cut(s, "<"+tag+">")
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, "</"+tag+">")
	return v, ok
}

// xmlLine reads one "<key>value</key>" line.
func xmlLine(line string) (key, val string, ok bool) {
	line = strings.TrimSpace(line)
	rest, ok := strings.CutPrefix(line, "<")
	if !ok {
		return "", "", false
	}
	key, rest, ok = strings.Cut(rest, ">")
	if !ok || key == "" || strings.ContainsAny(key, "</ ") {
		return "", "", false
	}
	val, ok = strings.CutSuffix(rest, "</"+key+">")
	return key, val, ok
}

// isJSONTypeName reports whether s is one JSON schema type name.
func isJSONTypeName(s string) bool {
	switch s {
	case "string", "number", "integer", "boolean", "array", "object", "null":
		return true
	}
	return false
}

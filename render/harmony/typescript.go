package harmony

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// schemaTypeScript renders a JSON schema as the TypeScript-like type openai_harmony writes for a
// function's parameters (json_schema_to_typescript in encoding.rs): objects as `{ key?: type, }`
// blocks with title, description, examples and default comments, string enums as unions, oneOf
// as `| variant` lines, `nullable` as `| null`, integer as number, anything else as any.
func schemaTypeScript(raw json.RawMessage) string {
	return tsType(gjson.ParseBytes(raw), "")
}

func isEnum(s gjson.Result) bool {
	e, ok := field(s, "enum")
	return ok && e.IsArray() && len(e.Array()) > 0
}

// withNull appends " | null" to t when schema s says nullable: true and t has no null yet.
func withNull(s gjson.Result, t string) string {
	if n, ok := field(s, "nullable"); ok && n.Type == gjson.True && !strings.Contains(t, "null") {
		return t + " | null"
	}
	return t
}

// defaultComment is a default value as a trailing comment renders it: strings quoted unless the
// schema is an enum (then bare), other values as serde_json prints them.
func defaultComment(s, def gjson.Result) string {
	if def.Type == gjson.String {
		if !isEnum(s) {
			return `default: "` + def.Str + `"`
		}
		return "default: " + def.Str
	}
	return "default: " + serdeJSON(def)
}

func tsType(s gjson.Result, indent string) string {
	if oneOf, ok := field(s, "oneOf"); ok && oneOf.IsArray() {
		var b strings.Builder
		for _, v := range oneOf.Array() {
			b.WriteString("\n" + indent + " | ")
			b.WriteString(withNull(v, tsType(v, indent+"   ")))
			var comments []string
			if d, ok := fieldString(v, "description"); ok {
				comments = append(comments, d)
			}
			if def, ok := field(v, "default"); ok {
				// Unlike a property's default, a top-level variant's enum string stays quoted.
				if def.Type == gjson.String && !isEnum(v) {
					comments = append(comments, `default: "`+def.Str+`"`)
				} else {
					comments = append(comments, "default: "+serdeJSON(def))
				}
			}
			if len(comments) > 0 {
				b.WriteString(" // " + strings.Join(comments, " "))
			}
		}
		return b.String()
	}
	typ, hasType := field(s, "type")
	if hasType && typ.IsArray() {
		var names []string
		for _, t := range typ.Array() {
			if t.Type == gjson.String {
				if t.Str == "integer" {
					names = append(names, "number")
				} else {
					names = append(names, t.Str)
				}
			}
		}
		if len(names) > 0 {
			return strings.Join(names, " | ")
		}
	}
	if !hasType || typ.Type != gjson.String {
		return "any"
	}
	switch typ.Str {
	case "object":
		return tsObject(s, indent)
	case "string":
		if e, ok := field(s, "enum"); ok && e.IsArray() {
			var alts []string
			for _, v := range e.Array() {
				if v.Type == gjson.String {
					alts = append(alts, `"`+v.Str+`"`)
				}
			}
			if len(alts) > 0 {
				return strings.Join(alts, " | ")
			}
		}
		return "string"
	case "number", "integer":
		return "number"
	case "boolean":
		return "boolean"
	case "array":
		if items, ok := field(s, "items"); ok {
			return tsType(items, indent) + "[]"
		}
		return "Array<any>"
	}
	return "any"
}

func tsObject(s gjson.Result, indent string) string {
	var b strings.Builder
	if d, ok := fieldString(s, "description"); ok {
		b.WriteString(indent + "// " + d + "\n")
	}
	b.WriteString("{\n")
	props, ok := field(s, "properties")
	if ok && props.IsObject() {
		required := map[string]bool{}
		if req, ok := field(s, "required"); ok && req.IsArray() {
			for _, r := range req.Array() {
				if r.Type == gjson.String {
					required[r.Str] = true
				}
			}
		}
		for _, m := range members(props) {
			optional := "?"
			if required[m.key] {
				optional = ""
			}
			tsProperty(&b, m.key, optional, m.val, indent)
		}
	}
	b.WriteString(indent + "}")
	return b.String()
}

func tsProperty(b *strings.Builder, key, optional string, val gjson.Result, indent string) {
	if t, ok := fieldString(val, "title"); ok {
		b.WriteString(indent + "// " + t + "\n" + indent + "//\n")
	}
	oneOf, hasOneOf := field(val, "oneOf")
	if !hasOneOf {
		if d, ok := fieldString(val, "description"); ok {
			b.WriteString(indent + "// " + d + "\n")
		}
	}
	if ex, ok := field(val, "examples"); ok && ex.IsArray() {
		if list := ex.Array(); len(list) > 0 {
			b.WriteString(indent + "// Examples:\n")
			for _, e := range list {
				if e.Type == gjson.String {
					b.WriteString(indent + `// - "` + e.Str + "\"\n")
				}
			}
		}
	}
	if hasOneOf && oneOf.IsArray() {
		tsOneOfProperty(b, key, optional, val, oneOf.Array(), indent)
		return
	}
	b.WriteString(indent + key + optional + ": ")
	b.WriteString(withNull(val, tsType(val, indent+"    ")))
	b.WriteByte(',')
	if !hasOneOf {
		if def, ok := field(val, "default"); ok {
			b.WriteString(" // " + defaultComment(val, def))
		}
	}
	b.WriteByte('\n')
}

// tsOneOfProperty renders a property whose schema is a oneOf: comments above the name, then one
// `| variant` line per alternative, then a lone comma.
func tsOneOfProperty(b *strings.Builder, key, optional string, val gjson.Result, variants []gjson.Result, indent string) {
	propDesc, hasPropDesc := fieldString(val, "description")
	skipPropDesc := false
	if hasPropDesc && len(variants) > 0 {
		if d, ok := fieldString(variants[0], "description"); ok && d == propDesc {
			skipPropDesc = true
		}
	}
	descAbove := false
	if hasPropDesc && !skipPropDesc {
		b.WriteString(indent + "// " + propDesc + "\n")
		descAbove = true
	}
	if def, ok := field(val, "default"); ok {
		b.WriteString(indent + "// " + defaultComment(val, def) + "\n")
	}
	b.WriteString(indent + key + optional + ":\n")
	for i, v := range variants {
		b.WriteString(indent + " | ")
		b.WriteString(withNull(v, tsType(v, indent+"   ")))
		var comments []string
		if i != 0 || !descAbove {
			if d, ok := fieldString(v, "description"); ok && (!hasPropDesc || d != propDesc) {
				comments = append(comments, d)
			}
		}
		if def, ok := field(v, "default"); ok {
			comments = append(comments, defaultComment(v, def))
		}
		if len(comments) > 0 {
			b.WriteString(" // " + strings.Join(comments, " "))
		}
		b.WriteByte('\n')
	}
	b.WriteString(indent + ",\n")
}

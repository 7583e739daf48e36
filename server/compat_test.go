package server

import (
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/stream"
)

// compatRow is one row of the user guide's compatibility table.
type compatRow struct{ answer, why string }

// readCompatTable parses docs/user-guide.md's "## Compatibility" table: endpoint → field → row.
func readCompatTable(t *testing.T) map[string]map[string]compatRow {
	t.Helper()
	b, err := os.ReadFile("../docs/user-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Compatibility\n")
	if !ok {
		t.Fatal("docs/user-guide.md has no '## Compatibility' section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	table := map[string]map[string]compatRow{}
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[2]), "`") {
			continue
		}
		ep := strings.TrimSpace(cells[1])
		field := strings.Trim(strings.TrimSpace(cells[2]), "`")
		row := compatRow{answer: strings.TrimSpace(cells[3]), why: strings.TrimSpace(cells[4])}
		if table[ep] == nil {
			table[ep] = map[string]compatRow{}
		}
		if _, dup := table[ep][field]; dup {
			t.Errorf("compatibility table: %s %s listed twice", ep, field)
		}
		if row.why == "" {
			t.Errorf("compatibility table: %s %s gives no reason", ep, field)
		}
		table[ep][field] = row
	}
	return table
}

// sdkFields lists the request fields of an openai-go params type: its JSON body or query keys,
// and one level of the keys of object-valued fields (dotted), unions and arrays not entered.
func sdkFields(ty reflect.Type) (fields []string, children map[string][]string) {
	children = map[string][]string{}
	name := func(f reflect.StructField) string {
		for _, key := range []string{"json", "query"} {
			if n, _, _ := strings.Cut(f.Tag.Get(key), ","); n != "" && n != "-" {
				return n
			}
		}
		return ""
	}
	for i := range ty.NumField() {
		f := ty.Field(i)
		n := name(f)
		if n == "" || !f.IsExported() {
			continue
		}
		fields = append(fields, n)
		ft := f.Type
		if ft.Kind() != reflect.Struct || strings.Contains(ft.Name(), "Union") || strings.HasPrefix(ft.Name(), "Opt[") {
			continue
		}
		for j := range ft.NumField() {
			if c := name(ft.Field(j)); c != "" && ft.Field(j).IsExported() {
				children[n] = append(children[n], n+"."+c)
			}
		}
	}
	return fields, children
}

var compatEndpoints = []struct {
	endpoint string
	params   reflect.Type
	rules    map[string]fieldRule
	extra    []string // fields the SDK sets outside the params type
}{
	{endpointCreate, reflect.TypeFor[responses.ResponseNewParams](), createFields, []string{"stream"}},
	{endpointRetrieve, reflect.TypeFor[responses.ResponseGetParams](), retrieveFields, []string{"stream"}},
	{endpointInputItems, reflect.TypeFor[responses.InputItemListParams](), inputItemsFields, nil},
	{endpointInputTokens, reflect.TypeFor[responses.InputTokenCountParams](), inputTokensFields, nil},
	{endpointConversationCreate, reflect.TypeFor[conversations.ConversationNewParams](), conversationCreateFields, nil},
	{endpointConversationUpdate, reflect.TypeFor[conversations.ConversationUpdateParams](), conversationUpdateFields, nil},
	{endpointConversationItems, reflect.TypeFor[conversations.ItemListParams](), conversationItemsFields, nil},
	{endpointConversationItemsCreate, reflect.TypeFor[conversations.ItemNewParams](), conversationItemsCreateFields, nil},
	{endpointConversationItem, reflect.TypeFor[conversations.ItemGetParams](), conversationItemFields, nil},
}

// TestCompatibilityTable: every request field of the SDK has a row in the user guide, and the
// row's answer is the server's (fields.go).
func TestCompatibilityTable(t *testing.T) {
	t.Parallel()
	table := readCompatTable(t)
	for _, ep := range compatEndpoints {
		rows := table[ep.endpoint]
		fields, children := sdkFields(ep.params)
		fields = append(fields, ep.extra...)
		if len(fields) == 0 {
			t.Errorf("%s: no fields found in %v", ep.endpoint, ep.params)
		}
		for _, f := range fields {
			row, ok := rows[f]
			if !ok {
				t.Errorf("%s: SDK field %q (%v) is missing from the compatibility table in docs/user-guide.md", ep.endpoint, f, ep.params)
				continue
			}
			if row.answer != honoured {
				continue // an ignored or rejected object is answered whole
			}
			for _, c := range children[f] {
				if _, ok := rows[c]; !ok {
					t.Errorf("%s: SDK field %q is missing from the compatibility table (its parent %q is honoured)", ep.endpoint, c, f)
				}
			}
		}
		for f, row := range rows {
			rule, ok := ep.rules[f]
			switch {
			case !ok:
				t.Errorf("%s: the table answers %q (%s) but the server has no rule for it (fields.go)", ep.endpoint, f, row.answer)
			case rule.answer != row.answer:
				t.Errorf("%s %s: the table says %s, the server %s", ep.endpoint, f, row.answer, rule.answer)
			}
		}
		for f := range ep.rules {
			if _, ok := rows[f]; !ok {
				t.Errorf("%s: the server answers %q but the compatibility table has no row for it", ep.endpoint, f)
			}
		}
	}
}

// TestRejectedAndIgnoredFieldsAnswer: a create naming a rejected field, or an ignored one with a
// value of the wrong type, is a 400 naming that field.
func TestRejectedAndIgnoredFieldsAnswer(t *testing.T) {
	t.Parallel()
	for _, name := range sortedKeys(createFields) {
		rule := createFields[name]
		if rule.answer == honoured || (rule.answer == ignored && rule.check == nil) {
			continue
		}
		body, err := sjson.SetRawBytes([]byte(`{"model":"m","input":"x"}`), name, []byte("12345"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = parseRequest(body, limits{MaxInputItems: 10}, seqIDs())
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != 400 || ae.Param != name {
			t.Errorf("%s field %s: parseRequest(%s) = %v, want 400 naming %q", rule.answer, name, body, err, name)
		}
	}
}

// TestResponseObjectHasSDKFields: every field of the SDK's Response type is in stitch's response
// object (null where stitch has no value), so typed clients never meet a missing required field.
// conversation alone is left out when the response belongs to none.
func TestResponseObjectHasSDKFields(t *testing.T) {
	t.Parallel()
	var r stream.Response
	keys := map[string]bool{}
	if err := gjsonForEachKey(r.AppendJSON(nil), func(k string) { keys[k] = true }); err != nil {
		t.Fatal(err)
	}
	ty := reflect.TypeFor[responses.Response]()
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "conversation" {
			continue
		}
		if !keys[name] {
			t.Errorf("the SDK's Response field %q is missing from stitch's response object", name)
		}
	}
}

func gjsonForEachKey(doc []byte, f func(string)) error {
	if !gjson.ValidBytes(doc) {
		return errors.New("response JSON is not valid")
	}
	gjson.ParseBytes(doc).ForEach(func(k, _ gjson.Result) bool {
		f(k.Str)
		return true
	})
	return nil
}

// TestNodeSDKCreateFieldsAnswered: every top-level field of the Node SDK's ResponseCreateParams
// (e2e/node's openai package, newer than the Go SDK in places: background_options) has an answer
// in createFields, so no field a client can send is dropped silently. Skipped without the Node
// clients installed (`make e2e-deps`; CI installs them).
func TestNodeSDKCreateFieldsAnswered(t *testing.T) {
	b, err := os.ReadFile("../e2e/node/node_modules/openai/resources/responses/responses.d.ts")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Node SDK is not installed under CI: %v", err)
		}
		t.Skipf("the Node SDK is not installed (make e2e-deps): %v", err)
	}
	_, body, ok := strings.Cut(string(b), "\nexport interface ResponseCreateParamsBase {\n")
	if !ok {
		t.Fatal("responses.d.ts declares no ResponseCreateParamsBase")
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	fieldRE := regexp.MustCompile(`(?m)^    ([a-z_]+)\??:`)
	n := 0
	for _, m := range fieldRE.FindAllStringSubmatch(body, -1) {
		n++
		if _, ok := createFields[m[1]]; !ok {
			t.Errorf("the Node SDK's ResponseCreateParams.%s has no answer in createFields (server/fields.go) nor a row in docs/user-guide.md", m[1])
		}
	}
	if n < 25 {
		t.Fatalf("read %d fields of ResponseCreateParamsBase; the declaration changed shape", n)
	}
}

package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestItemReferences: item_reference inputs resolve to the tenant's stored items (the prompt then
// equals the one built from the items themselves); an unknown id is a 400 naming the input.
func TestItemReferences(t *testing.T) {
	st := newEquivalenceStack(t, false)
	r1 := st.create(t, `{"model":"qwen3","input":"Say hello.","reasoning":{"effort":"none"}}`)
	inputs := func(id string) string {
		resp, err := http.Get(st.url + "/v1/responses/" + id + "/input_items")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	userID := gjson.Get(inputs(r1.Get("id").Str), "data.0.id").Str
	msg := r1.Get(`output.#(type=="message")`)
	follow := `{"type":"message","role":"user","content":"And again."}`

	st.create(t, `{"model":"qwen3","reasoning":{"effort":"none"},"input":[{"type":"item_reference","id":"`+userID+
		`"},{"type":"item_reference","id":"`+msg.Get("id").Str+`"},`+follow+`]}`)
	st.create(t, `{"model":"qwen3","reasoning":{"effort":"none"},"input":[{"role":"user","content":"Say hello."},`+
		msg.Raw+`,`+follow+`]}`)
	lines := st.record.lines()
	if got, want := gjson.Get(lines[1], "prompt_token_ids").Raw, gjson.Get(lines[2], "prompt_token_ids").Raw; got != want {
		t.Errorf("prompt from references differs from the prompt from the items:\n%s\n%s", got, want)
	}

	resp, err := http.Post(st.url+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"qwen3","input":[{"type":"item_reference","id":"msg_nope"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || gjson.GetBytes(b, "error.param").Str != "input[0].id" {
		t.Errorf("unknown reference: %d %s, want 400 with param input[0].id", resp.StatusCode, b)
	}
}

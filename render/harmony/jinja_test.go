package harmony

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestJinjaAgreement renders the conversations on which gpt-oss's own chat template (Python
// Jinja2, testdata/harmony/jinja, tools/oracle/harmony_jinja.py) and openai_harmony are meant to
// agree, and checks the Harmony render equals the template's text, and its ids the template
// text's ids (the Jinja path encodes the whole text, splitting on special tokens).
func TestJinjaAgreement(t *testing.T) {
	enc := testEncoder(t)
	var cases []struct {
		Name      string `json:"name"`
		StartDate string `json:"start_date"`
		Request   string `json:"request"`
		Text      string `json:"text"`
		Differs   bool   `json:"differs"` // a documented disagreement (see harmony_jinja.py)
	}
	readJSON(t, "jinja/golden.json", &cases)
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			req, err := RequestFromBody([]byte(c.Request))
			if err != nil {
				t.Fatal(err)
			}
			_, p, err := enc.RenderResponses(req, Options{StartDate: c.StartDate})
			if err != nil {
				t.Fatal(err)
			}
			if c.Differs {
				if p.Text == c.Text {
					t.Error("expected the documented difference from the template, got the same text")
				}
				return
			}
			if p.Text != c.Text {
				t.Errorf("text differs from the chat template (-template +harmony):\n%s", cmp.Diff(c.Text, p.Text))
			}
			if diff := cmp.Diff(enc.tok.Encode(c.Text), p.IDs); diff != "" {
				t.Errorf("ids differ from the template text's (-template +harmony):\n%s", diff)
			}
		})
	}
}

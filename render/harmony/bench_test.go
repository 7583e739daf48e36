package harmony

import "testing"

// BenchmarkRenderResponses renders the golden suite's 12-round agent conversation (the largest
// case) from its request body: mapping, tool schemas and tokenization.
func BenchmarkRenderResponses(b *testing.B) {
	enc := testEncoder(b)
	var cases []goldenCase
	readJSON(b, "cases.json", &cases)
	var body []byte
	for _, c := range cases {
		if c.Name == "loop/long-agent" {
			body = []byte(c.Request)
		}
	}
	if body == nil {
		b.Fatal("case loop/long-agent not found")
	}
	b.ReportAllocs()
	for b.Loop() {
		req, err := RequestFromBody(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := enc.RenderResponses(req, Options{StartDate: "2025-06-28"}); err != nil {
			b.Fatal(err)
		}
	}
}

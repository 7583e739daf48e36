package server

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseRequest parses a long agent turn's request as the bench driver sends it:
// instructions, tools, one new tool output of about 20 KB, previous_response_id.
func BenchmarkParseRequest(b *testing.B) {
	output := strings.Repeat("line of tool output with some words in it\n", 500)
	body := fmt.Appendf(nil, `{"model":"m","instructions":%q,"tools":[{"type":"function","name":"run","description":"Run a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}],"input":[{"type":"function_call_output","call_id":"call_1","output":%q}],"previous_response_id":"resp_1","max_output_tokens":2048,"stream":true,"store":true}`,
		strings.Repeat("Be brief. ", 100), output)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseRequest(body, limits{MaxInputItems: 100}, seqIDs()); err != nil {
			b.Fatal(err)
		}
	}
}

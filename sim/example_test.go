package sim_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/sim/simtest"
)

// A simulator behind httptest, asked the same token prompt twice: the second request reports
// the whole blocks of the prompt as cached (49 tokens → 48).
func ExampleNew() {
	s, err := sim.New(sim.Options{Tokenizer: simtest.ByteTokenizer{}, ServedModelName: "qwen3", Fast: true})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()

	prompt := "[" + strings.TrimSuffix(strings.Repeat("104,", 49), ",") + "]"
	body := `{"model":"qwen3","prompt":` + prompt + `,"max_tokens":4,"cache_salt":"tenant-1"}`
	for range 2 {
		resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		_, usage, _ := strings.Cut(string(out), `"usage":`)
		usage, _, _ = strings.Cut(usage, `,"kv_transfer_params"`)
		fmt.Println(resp.StatusCode, usage)
	}
	fmt.Printf("%+v\n", s.Stats())
	// Output:
	// 200 {"prompt_tokens":49,"total_tokens":53,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":0}}
	// 200 {"prompt_tokens":49,"total_tokens":53,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":48}}
	// {Queries:98 Hits:48 Blocks:3 Used:0}
}

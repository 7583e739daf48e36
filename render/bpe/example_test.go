package bpe_test

import (
	"fmt"
	"log"
	"os"

	"github.com/stitchllm/stitch/render/bpe"
)

func Example() {
	data, err := os.ReadFile("../../testdata/models/qwen3/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	tok, err := bpe.Load(data)
	if err != nil {
		log.Fatal(err)
	}
	ids := tok.Encode("<|im_start|>user\nHello world<|im_end|>")
	fmt.Println(ids)
	fmt.Printf("%q\n", tok.Decode(ids))
	fmt.Println(tok.AddedTokenSpans("<|im_start|>user\nHello world<|im_end|>"))
	// Output:
	// [151644 872 198 9707 1879 151645]
	// "<|im_start|>user\nHello world<|im_end|>"
	// [{0 12 151644} {28 38 151645}]
}

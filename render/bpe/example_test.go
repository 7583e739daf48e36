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

func ExampleDecodeStream() {
	data, err := os.ReadFile("../../testdata/models/qwen3/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	tok, err := bpe.Load(data)
	if err != nil {
		log.Fatal(err)
	}
	// "𓀀" (U+13000) is four bytes spread over several tokens: nothing is emitted until it is whole.
	d := tok.NewDecodeStream()
	for _, id := range tok.Encode("Hi 𓀀!") {
		fmt.Printf("%d → %q\n", id, d.Next(id))
	}
	fmt.Printf("flush → %q\n", d.Flush())
	// Output:
	// 13048 → "Hi"
	// 220 → " "
	// 124373 → ""
	// 222 → ""
	// 222 → "𓀀"
	// 0 → "!"
	// flush → ""
}

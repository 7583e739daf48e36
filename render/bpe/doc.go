// Package bpe is a pure-Go byte-level BPE tokenizer that loads a Hugging Face tokenizer.json and
// produces exactly the ids of the Rust tokenizers crate (the code vLLM runs).
package bpe

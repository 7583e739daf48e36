// Package bpe is a pure-Go byte-level BPE tokenizer that loads a Hugging Face tokenizer.json and
// produces exactly the ids of the Rust tokenizers crate (the code vLLM runs).
//
// # Pipeline
//
// [Tokenizer.Encode] runs the stages of the Rust crate, in order:
//
//  1. Added tokens are found in the raw text first, leftmost-longest ([Tokenizer.AddedTokenSpans]);
//     each becomes its id as is.
//  2. Every segment between them is normalized (NFC with the crate's Unicode 9 behaviour, when the
//     file asks for it),
//  3. pre-tokenized by the file's split pattern (hand-written scanners with Oniguruma's semantics),
//  4. spelled in the byte-level alphabet and merged by BPE rank (lowest rank first, leftmost among
//     equals; with ignore_merges a pre-token that is a vocab token is taken whole).
//
// Encoding never adds BOS/EOS: it is the crate's encode(text, add_special_tokens=false), which is
// what vLLM's chat path uses.
//
// # Decoding
//
// [Tokenizer.Decode] maps ids back to bytes and reads them as UTF-8, replacing ill-formed sequences
// like Rust's String::from_utf8_lossy. [DecodeStream] does the same one id at a time for streaming,
// holding back incomplete UTF-8 sequences.
//
// # Refused features
//
// [Load] supports what Qwen3 and gpt-oss (o200k) use and refuses everything else with
// [ErrUnsupported], naming the feature: other models, normalizers, pre-tokenizers and decoders, byte
// fallback, unknown tokens, dropout, and added tokens with lstrip, rstrip, single_word or normalized.
// It never approximates.
//
// # Exactness
//
// The ids are checked against the Rust crate (tools/oracle) on the corpus in testdata/tokenizer; see
// its README for how to regenerate the reference ids.
package bpe

// Package bpe is a pure-Go byte-level BPE tokenizer that loads a Hugging Face tokenizer.json and
// produces exactly the ids of the Rust tokenizers crate (the code vLLM runs).
//
// # Pipeline
//
// [Tokenizer.Encode] runs the stages of the Rust crate, in order:
//
//  1. Added tokens with normalized=false are found in the raw text first, leftmost-longest
//     ([Tokenizer.AddedTokenSpans]); each becomes its id as is.
//  2. Every segment between them is normalized (NFC with the crate's Unicode 9 behaviour, or a
//     Sequence of normalizers, when the file asks for it); added tokens with normalized=true are then
//     found in the normalized segment the same way,
//  3. pre-tokenized by the file's pre-tokenizer: Splits (any behavior, invert, in a Sequence) then
//     ByteLevel. Split patterns of Qwen, Llama 3, o200k (gpt-oss), tekken (Mistral), GPT-2 and
//     DeepSeek's three Splits have hand-written scanners with Oniguruma's semantics; any other
//     pattern runs on a general backtracking engine over the same Unicode tables (exact, slower;
//     [Tokenizer.Notes] says so), which refuses the constructs whose meaning was not extracted from
//     the oracle (regex_parse.go),
//  4. spelled in the byte-level alphabet and merged by BPE rank (lowest rank first, leftmost among
//     equals; with ignore_merges a pre-token that is a vocab token is taken whole).
//
// Encoding never adds BOS/EOS: it is the crate's encode(text, add_special_tokens=false), which is
// what vLLM's chat path uses. [Tokenizer.EncodeWithSpecialTokens] applies the post-processor
// (TemplateProcessing, Sequence, ByteLevel) as add_special_tokens=true does.
//
// # Decoding
//
// [Tokenizer.Decode] maps ids back to bytes and reads them as UTF-8, replacing ill-formed sequences
// like Rust's String::from_utf8_lossy. [DecodeStream] does the same one id at a time for streaming,
// holding back incomplete UTF-8 sequences.
//
// # Refused features
//
// [Load] supports what the byte-level BPE families use (Qwen2.5/3, gpt-oss, Llama 3.x, DeepSeek
// V3/V4, Mistral tekken) and refuses everything else with [ErrUnsupported], naming the feature:
// other models, normalizers, pre-tokenizers, post-processors and decoders, Split patterns outside
// the engine's subset, byte fallback, unknown tokens, dropout, and added tokens with lstrip, rstrip
// or single_word. It never approximates.
//
// # Exactness
//
// The ids are checked against the Rust crate (tools/oracle) on the corpus in testdata/tokenizer; see
// its README for how to regenerate the reference ids.
package bpe

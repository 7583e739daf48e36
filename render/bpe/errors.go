package bpe

import "errors"

// ErrUnsupported is returned by [Load] when tokenizer.json uses a feature this package does not
// implement (another model type, normalizer, pre-tokenizer, post-processor or decoder, a Split
// pattern outside the general engine's subset, byte fallback, added tokens with
// lstrip/rstrip/single_word, …). The message names the feature. Tokenizing such a
// model here would silently give ids that differ from vLLM's, so the caller must not fall back to an
// approximation: serve the model without stitch's token path, or extend this package.
var ErrUnsupported = errors.New("unsupported tokenizer feature")

// ErrInvalid is returned by [Load] when tokenizer.json is malformed (not JSON, missing or inconsistent
// vocabulary or merges). The file is corrupt or not a Hugging Face tokenizer.json.
var ErrInvalid = errors.New("invalid tokenizer.json")

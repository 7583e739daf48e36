package bpe

// TEMPORARY scaffolding: plain NFC from x/text (Unicode 15). Replaced by the Unicode-9-exact form the
// Rust crate uses (issue 2); the signature stays.

import "golang.org/x/text/unicode/norm"

// normalizeNFC returns s in NFC as the Rust tokenizers crate computes it.
func normalizeNFC(s string) string { return norm.NFC.String(s) }

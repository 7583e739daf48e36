package bpe

// AppendEncodeOrdinary appends the token ids of text encoded as ordinary text: added tokens are
// not matched, so "<|end|>" typed by a user becomes the ids of its characters. This is tiktoken's
// encode_ordinary, which openai_harmony uses for every piece of message text (gpt-oss prompts on
// vLLM's Harmony path), unlike Encode, which splits on added tokens as the Rust crate does.
func (t *Tokenizer) AppendEncodeOrdinary(dst []uint32, text string) []uint32 {
	sc := t.getScratch()
	dst = t.appendSegment(dst, sc, text, true)
	t.scratch.Put(sc)
	return dst
}

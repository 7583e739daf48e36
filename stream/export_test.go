package stream

// ParseChunkFastForTest is ParseChunk's fast path alone; it reports whether it took data.
func ParseChunkFastForTest(data []byte, c *Chunk) bool {
	c.reset()
	ok := parseChunkFast(data, c)
	if ok && len(c.StopReason) == 0 {
		c.StopReason = nil
	}
	return ok
}

// ParseChunkGeneralForTest is ParseChunk's general path alone.
func ParseChunkGeneralForTest(data []byte, c *Chunk) error {
	c.reset()
	return parseChunkGeneral(data, c)
}

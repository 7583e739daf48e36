package bpe

// The GPT-2 byte-level alphabet: every byte is spelled as one printable code point in vocab strings.
// Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68 bytes
// (controls, space, DEL, NBSP, soft hyphen) map in order to U+0100, U+0101, … so that, for example,
// a space is spelled 'Ġ' (U+0120) and a newline 'Ċ' (U+010A).

// byteLevelAlphabet holds the code point of each byte and the byte of each code point.
type byteLevelAlphabet struct {
	char [256]rune
	// byteOf maps a code point below 0x144 to its byte + 1 (0 when the code point is not in the
	// alphabet); every code point of the alphabet is below 0x144.
	byteOf [0x144]uint16
}

func newByteLevelAlphabet() *byteLevelAlphabet {
	a := &byteLevelAlphabet{}
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			a.char[b] = rune(b)
		} else {
			a.char[b] = 256 + n
			n++
		}
		a.byteOf[a.char[b]] = uint16(b) + 1
	}
	return a
}

// decodeByte reports the byte a code point spells, and whether it is in the alphabet.
func (a *byteLevelAlphabet) decodeByte(r rune) (byte, bool) {
	if r < 0 || int(r) >= len(a.byteOf) || a.byteOf[r] == 0 {
		return 0, false
	}
	return byte(a.byteOf[r] - 1), true
}

// appendDecoded appends the bytes spelled by s to dst and reports whether every code point of s is in
// the alphabet. When it is not, dst is returned unchanged.
func (a *byteLevelAlphabet) appendDecoded(dst []byte, s string) ([]byte, bool) {
	n := len(dst)
	for _, r := range s {
		b, ok := a.decodeByte(r)
		if !ok {
			return dst[:n], false
		}
		dst = append(dst, b)
	}
	return dst, true
}

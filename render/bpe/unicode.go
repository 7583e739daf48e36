package bpe

import "unicode/utf8"

// propsOf returns the property bits (prop* constants, unicode_tables.go) of r. Values outside the
// Unicode range get the bits of U+FFFD, as the decoder substitutes it for invalid UTF-8.
func propsOf(r rune) uint16 {
	if uint32(r) < utf8.RuneSelf {
		return propASCII[r]
	}
	if uint32(r) > utf8.MaxRune {
		r = utf8.RuneError
	}
	blk := int(propIndex[r>>propBlockBits])
	return propClasses[propBlocks[blk<<propBlockBits|int(r)&(1<<propBlockBits-1)]]
}

// propsAt returns the property bits and the byte length of the code point starting at s[i]; an
// invalid byte counts as one U+FFFD.
func propsAt(s string, i int) (uint16, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return propASCII[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return propsOf(r), n
}

// xpropsOf returns the extra property bits (xprop* constants, unicode_tables.go) of r, with the
// same treatment of values outside the Unicode range as propsOf.
func xpropsOf(r rune) uint8 {
	if uint32(r) < utf8.RuneSelf {
		return xpropASCII[r]
	}
	if uint32(r) > utf8.MaxRune {
		r = utf8.RuneError
	}
	blk := int(xpropIndex[r>>propBlockBits])
	return xpropBlocks[blk<<propBlockBits|int(r)&(1<<propBlockBits-1)]
}

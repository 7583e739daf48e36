// Command unicodegen turns the code-point sets extracted from the Rust tokenizers oracle
// (testdata/unicode/*.txt, written by tools/oracle/classes.js) into render/bpe/unicode_tables.go:
// a two-level lookup from a code point to the property bits the pre-tokenizer scanners use, plus
// the set of code points unassigned in Unicode 9.0 that the NFC normalizer splits at.
//
// Regenerate, from the repository root:
//
//	node tools/oracle/classes.js testdata/unicode   # only when the oracle changes
//	go run ./tools/unicodegen
//
// With -corpus it instead writes the seeded random input corpora of the golden tests
// (testdata/pretok/{corpus,edge,alphabet}.jsonl.gz, testdata/unicode/nfc_input.jsonl.gz),
// which tools/oracle/pretok.js and tools/oracle/classes.js then run through the oracle.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/rangetable"
)

const (
	maxRune   = 0x10FFFF
	blockBits = 7 // code points per second-level block: 1<<blockBits
)

// Property bits, in the order they are declared in the generated file.
var bitNames = []string{
	"propL", "propN", "propM", "propLu", "propLl", "propLt", "propLm", "propLo", "propSpace",
	"propUpper", "propLower", "propPrefix", "propOther", "propNew",
}

var bitDocs = map[string]string{
	"propL":      `\p{L}`,
	"propN":      `\p{N}`,
	"propM":      `\p{M}`,
	"propLu":     `\p{Lu}`,
	"propLl":     `\p{Ll}`,
	"propLt":     `\p{Lt}`,
	"propLm":     `\p{Lm}`,
	"propLo":     `\p{Lo}`,
	"propSpace":  `\s (Oniguruma: Unicode White_Space)`,
	"propUpper":  `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k)`,
	"propLower":  `[\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k)`,
	"propPrefix": `[^\r\n\p{L}\p{N}]`,
	"propOther":  `[^\s\p{L}\p{N}]`,
	"propNew":    `unassigned in Unicode 9.0 (NFC splits there)`,
}

func bit(name string) uint16 {
	for i, n := range bitNames {
		if n == name {
			return 1 << i
		}
	}
	panic("unknown bit " + name)
}

func main() {
	in := flag.String("in", "testdata/unicode", "directory of the extracted sets")
	out := flag.String("out", "render/bpe/unicode_tables.go", "generated Go file")
	corpus := flag.Bool("corpus", false, "instead, write the seeded input corpora testdata/pretok/{corpus,edge,alphabet}.jsonl.gz and testdata/unicode/nfc_input.jsonl.gz")
	dir := flag.String("corpus-dir", "testdata", "with -corpus: output directory")
	seed := flag.Uint64("corpus-seed", corpusSeed, "with -corpus: random seed")
	scale := flag.Int("corpus-scale", 1, "with -corpus: size multiplier")
	flag.Parse()
	if *corpus {
		if err := writeCorpora(*in, *dir, *seed, *scale); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := run(*in, *out); err != nil {
		log.Fatal(err)
	}
}

func run(in, out string) error {
	props := make([]uint16, maxRune+1)
	for _, set := range []struct{ file, bit string }{
		{"L", "propL"}, {"N", "propN"}, {"M", "propM"}, {"Lu", "propLu"}, {"Ll", "propLl"},
		{"Lt", "propLt"}, {"Lm", "propLm"}, {"Lo", "propLo"}, {"space", "propSpace"},
	} {
		cps, err := readSet(filepath.Join(in, set.file+".txt"))
		if err != nil {
			return err
		}
		b := bit(set.bit)
		for _, r := range cps {
			props[r] |= b
		}
	}
	if assigned9() == nil {
		return fmt.Errorf("x/text has no Unicode 9.0.0 assigned table")
	}
	upper := bit("propLu") | bit("propLt") | bit("propLm") | bit("propLo") | bit("propM")
	lower := bit("propLl") | bit("propLm") | bit("propLo") | bit("propM")
	subL := bit("propLu") | bit("propLl") | bit("propLt") | bit("propLm") | bit("propLo")
	for r := range props {
		p := props[r]
		if (p&bit("propL") != 0) != (p&subL != 0) {
			return fmt.Errorf("U+%04X: \\p{L} is not the union of Lu, Ll, Lt, Lm, Lo", r)
		}
		if p&upper != 0 {
			p |= bit("propUpper")
		}
		if p&lower != 0 {
			p |= bit("propLower")
		}
		if p&(bit("propL")|bit("propN")) == 0 && r != '\r' && r != '\n' {
			p |= bit("propPrefix")
		}
		if p&(bit("propL")|bit("propN")|bit("propSpace")) == 0 {
			p |= bit("propOther")
		}
		if !unicode.Is(assigned9(), rune(r)) {
			p |= bit("propNew")
		}
		props[r] = p
	}

	// Classes: distinct property words; class 0 is whatever U+0000 has.
	classOf := map[uint16]int{}
	var classes []uint16
	cls := make([]byte, len(props))
	for r, p := range props {
		c, ok := classOf[p]
		if !ok {
			c = len(classes)
			classOf[p] = c
			classes = append(classes, p)
		}
		if c > 255 {
			return fmt.Errorf("more than 256 property classes")
		}
		cls[r] = byte(c)
	}
	// Two-level table over cls.
	blockSize := 1 << blockBits
	blockOf := map[string]int{}
	var blocks []byte
	var stage1 []byte
	for start := 0; start < len(cls); start += blockSize {
		blk := string(cls[start : start+blockSize])
		n, ok := blockOf[blk]
		if !ok {
			n = len(blockOf)
			blockOf[blk] = n
			blocks = append(blocks, blk...)
		}
		if n > 255 {
			return fmt.Errorf("more than 256 distinct blocks: lower blockBits")
		}
		stage1 = append(stage1, byte(n))
	}

	var buf bytes.Buffer
	fmt.Fprintf(&buf, "// Code generated by go run ./tools/unicodegen; DO NOT EDIT.\n\n")
	fmt.Fprintf(&buf, "// Sources: testdata/unicode/*.txt, extracted from the Rust tokenizers oracle (Oniguruma, Unicode 16)\n")
	fmt.Fprintf(&buf, "// by tools/oracle/classes.js, and x/text rangetable.Assigned(\"9.0.0\"). Regenerate from the repository root:\n")
	fmt.Fprintf(&buf, "//\n//\tnode tools/oracle/classes.js testdata/unicode   # only when the oracle changes\n//\tgo run ./tools/unicodegen\n\n")
	fmt.Fprintf(&buf, "package bpe\n\n")
	fmt.Fprintf(&buf, "// Property bits of a code point.\nconst (\n")
	for i, n := range bitNames {
		if i == 0 {
			fmt.Fprintf(&buf, "\t%s uint16 = 1 << iota // %s\n", n, bitDocs[n])
		} else {
			fmt.Fprintf(&buf, "\t%s // %s\n", n, bitDocs[n])
		}
	}
	fmt.Fprintf(&buf, ")\n\n")
	fmt.Fprintf(&buf, "// propBlockBits is log2 of the code points per block of propBlocks.\nconst propBlockBits = %d\n\n", blockBits)
	fmt.Fprintf(&buf, "// propASCII holds the property bits of U+0000..U+007F.\nvar propASCII = [128]uint16{")
	for r := 0; r < 128; r++ {
		if r%8 == 0 {
			buf.WriteString("\n")
		}
		fmt.Fprintf(&buf, "%#04x, ", props[r])
	}
	fmt.Fprintf(&buf, "\n}\n\n")
	fmt.Fprintf(&buf, "// propClasses maps a class number (from propBlocks) to its property bits.\nvar propClasses = [%d]uint16{", len(classes))
	for i, p := range classes {
		if i%8 == 0 {
			buf.WriteString("\n")
		}
		fmt.Fprintf(&buf, "%#04x, ", p)
	}
	fmt.Fprintf(&buf, "\n}\n\n")
	fmt.Fprintf(&buf, "// propIndex maps r>>propBlockBits to a block number of propBlocks, one byte each.\nconst propIndex = \"\" +")
	writeBytes(&buf, stage1)
	fmt.Fprintf(&buf, "\n\n// propBlocks holds %d blocks of %d class numbers, one byte per code point.\nconst propBlocks = \"\" +", len(blockOf), blockSize)
	writeBytes(&buf, blocks)
	fmt.Fprintf(&buf, "\n")
	if err := writeExtra(&buf, in); err != nil {
		return err
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return fmt.Errorf("format generated source: %w", err)
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		return err
	}
	log.Printf("%s: %d classes, %d blocks of %d, %d bytes", out, len(classes), len(blockOf), blockSize, len(src))
	return nil
}

// readSet parses a file of hex code points and ranges ("0041..005A"), with # comments.
func readSet(path string) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []int
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		lo, hi, isRange := strings.Cut(t, "..")
		a, err := strconv.ParseUint(lo, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 16, 32); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, line, err)
			}
		}
		if b < a || b > maxRune {
			return nil, fmt.Errorf("%s:%d: bad range %q", path, line, t)
		}
		for r := a; r <= b; r++ {
			out = append(out, int(r))
		}
	}
	return out, sc.Err()
}

// writeBytes writes b as concatenated Go string literals of 64 bytes each.
func writeBytes(buf *bytes.Buffer, b []byte) {
	for i := 0; i < len(b); i += 64 {
		buf.WriteString("\n\t\"")
		for _, c := range b[i:min(i+64, len(b))] {
			fmt.Fprintf(buf, `\x%02x`, c)
		}
		buf.WriteString(`"`)
		if i+64 < len(b) {
			buf.WriteString(" +")
		}
	}
}

// assigned9 returns the code points assigned in Unicode 9.0.
func assigned9() *unicode.RangeTable { return rangetable.Assigned("9.0.0") }

// Extra property bits, in a second table (the first one's 16 bits are all taken): classes that only
// the general Split engine and the DeepSeek scanner read.
var extraBits = []struct{ file, name, doc string }{
	{"P", "xpropP", `\p{P}`},
	{"S", "xpropS", `\p{S}`},
}

// writeExtra appends the extra table: xpropASCII, xpropIndex and xpropBlocks, one byte of bits each.
func writeExtra(buf *bytes.Buffer, in string) error {
	props := make([]byte, maxRune+1)
	for i, e := range extraBits {
		cps, err := readSet(filepath.Join(in, e.file+".txt"))
		if err != nil {
			return err
		}
		for _, r := range cps {
			props[r] |= 1 << i
		}
	}
	blockSize := 1 << blockBits
	blockOf := map[string]int{}
	var blocks, stage1 []byte
	for start := 0; start < len(props); start += blockSize {
		blk := string(props[start : start+blockSize])
		n, ok := blockOf[blk]
		if !ok {
			n = len(blockOf)
			blockOf[blk] = n
			blocks = append(blocks, blk...)
		}
		if n > 255 {
			return fmt.Errorf("extra table: more than 256 distinct blocks")
		}
		stage1 = append(stage1, byte(n))
	}
	fmt.Fprintf(buf, "\n// Extra property bits of a code point (second table, read by xpropsOf).\nconst (\n")
	for i, e := range extraBits {
		if i == 0 {
			fmt.Fprintf(buf, "\t%s uint8 = 1 << iota // %s\n", e.name, e.doc)
		} else {
			fmt.Fprintf(buf, "\t%s // %s\n", e.name, e.doc)
		}
	}
	fmt.Fprintf(buf, ")\n\n// xpropASCII holds the extra bits of U+0000..U+007F.\nvar xpropASCII = [128]uint8{")
	for r := 0; r < 128; r++ {
		if r%16 == 0 {
			buf.WriteString("\n")
		}
		fmt.Fprintf(buf, "%d, ", props[r])
	}
	fmt.Fprintf(buf, "\n}\n\n// xpropIndex maps r>>propBlockBits to a block number of xpropBlocks.\nconst xpropIndex = \"\" +")
	writeBytes(buf, stage1)
	fmt.Fprintf(buf, "\n\n// xpropBlocks holds %d blocks of %d bit bytes, one per code point.\nconst xpropBlocks = \"\" +", len(blockOf), blockSize)
	writeBytes(buf, blocks)
	fmt.Fprintf(buf, "\n")
	return nil
}

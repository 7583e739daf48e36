package jinja

import (
	"math"
	"math/big"
	"math/bits"
	"strings"
)

// maxIntBits bounds int results (2**n, "x"*n) so that hostile templates
// cannot exhaust memory; CPython would try and fail with MemoryError.
const maxIntBits = 1 << 16

// maxRepeat bounds the bytes of a repeated or padded string, and
// maxRepeatItems the items of a repeated list (hostile-template guards far
// above what chat templates build).
const maxRepeat = 1 << 22

const maxRepeatItems = 1 << 16

func opTypeError(op string, l, r Value) error {
	return errf(KindType, "unsupported operand type(s) for %s: '%s' and '%s'", op, l.typeName(), r.typeName())
}

func binaryOp(op string, l, r Value) (Value, error) {
	if l.k == kUndefined || r.k == kUndefined {
		return Value{}, undefinedError(l, r)
	}
	if l.isNumber() && r.isNumber() {
		return numberOp(op, l, r)
	}
	switch op {
	case "+":
		switch {
		case l.k == kString && r.k == kString:
			if l.isMarkup() || r.isMarkup() {
				return markup(escapeValue(l).s + escapeValue(r).s), nil
			}
			return String(l.s + r.s), nil
		case l.k == kString:
			return Value{}, errf(KindType, "can only concatenate str (not \"%s\") to str", r.typeName())
		case l.isSeq() && l.k == r.k && l.isPlain() && r.isPlain():
			a, b := l.list(), r.list()
			out := make([]Value, 0, len(a)+len(b))
			out = append(append(out, a...), b...)
			if l.k == kTuple {
				return tuple(out...), nil
			}
			return List(out...), nil
		case l.isSeq() && l.isPlain():
			return Value{}, errf(KindType, "can only concatenate %s (not \"%s\") to %s", l.typeName(), r.typeName(), l.typeName())
		}
	case "*":
		seq, n := l, r
		if l.isInt() {
			seq, n = r, l
		}
		if n.isInt() && (seq.k == kString || seq.isPlain()) {
			count := int64(0)
			if n.k == kBig {
				if n.bigInt().Sign() > 0 {
					count = math.MaxInt64
				}
			} else {
				count = n.n
			}
			if count <= 0 {
				if seq.k == kString {
					return String(""), nil
				}
				if seq.k == kTuple {
					return tuple(), nil
				}
				return List(), nil
			}
			size := int64(len(seq.s))
			if seq.isSeq() {
				size = int64(len(seq.list()))
			}
			if size == 0 {
				return seq, nil
			}
			limit := int64(maxRepeat)
			if seq.isSeq() {
				limit = maxRepeatItems
			}
			if count > limit/size {
				return Value{}, errf(KindOverflow, "repeated sequence too large")
			}
			if seq.k == kString {
				return String(strings.Repeat(seq.s, int(count))), nil
			}
			var out []Value
			for i := int64(0); i < count; i++ {
				out = append(out, seq.list()...)
			}
			if seq.k == kTuple {
				return tuple(out...), nil
			}
			return List(out...), nil
		}
		if n.isInt() || l.k == kString || r.k == kString || l.isSeq() || r.isSeq() {
			return Value{}, errf(KindType, "can't multiply sequence by non-int of type '%s'", r.typeName())
		}
	case "%":
		if l.k == kString {
			if l.isMarkup() {
				r = escapeFormatArgs(r)
			}
			s, err := pyFormat(l.s, r)
			if err != nil {
				return Value{}, err
			}
			if l.isMarkup() {
				return markup(s), nil
			}
			return String(s), nil
		}
	}
	return Value{}, opTypeError(op, l, r)
}

// escapeFormatArgs escapes the string arguments of Markup % args
// (markupsafe's _MarkupEscapeHelper, simplified to str arguments).
func escapeFormatArgs(r Value) Value {
	switch r.k {
	case kString:
		return escapeValue(r)
	case kTuple:
		items := make([]Value, len(r.list()))
		for i, it := range r.list() {
			if it.k == kString {
				it = escapeValue(it)
			}
			items[i] = it
		}
		return tuple(items...)
	}
	return r
}

func numberOp(op string, l, r Value) (Value, error) {
	if l.k == kFloat || r.k == kFloat {
		return floatOp(op, toFloat(l), toFloat(r))
	}
	if l.k == kBig || r.k == kBig {
		return bigOp(op, l.bigInt(), r.bigInt())
	}
	a, b := l.n, r.n
	switch op {
	case "+":
		s := a + b
		if (s > a) == (b > 0) {
			return Int(s), nil
		}
	case "-":
		s := a - b
		if (s < a) == (b > 0) {
			return Int(s), nil
		}
	case "*":
		if a == 0 || b == 0 {
			return Int(0), nil
		}
		hi, lo := bits.Mul64(uint64(absI(a)), uint64(absI(b)))
		if hi == 0 && lo <= math.MaxInt64 && a != math.MinInt64 && b != math.MinInt64 {
			p := int64(lo)
			if (a < 0) != (b < 0) {
				p = -p
			}
			return Int(p), nil
		}
	case "/":
		if b == 0 {
			return Value{}, errf(KindZeroDivision, "division by zero")
		}
		return bigTrueDiv(big.NewInt(a), big.NewInt(b))
	case "//":
		if b == 0 {
			return Value{}, errf(KindZeroDivision, "integer division or modulo by zero")
		}
		if !(a == math.MinInt64 && b == -1) {
			q := a / b
			if (a%b != 0) && ((a < 0) != (b < 0)) {
				q--
			}
			return Int(q), nil
		}
	case "%":
		if b == 0 {
			return Value{}, errf(KindZeroDivision, "integer division or modulo by zero")
		}
		if b == -1 {
			return Int(0), nil
		}
		m := a % b
		if m != 0 && ((m < 0) != (b < 0)) {
			m += b
		}
		return Int(m), nil
	}
	return bigOp(op, big.NewInt(a), big.NewInt(b))
}

func absI(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

func bigTrueDiv(a, b *big.Int) (Value, error) {
	if b.Sign() == 0 {
		return Value{}, errf(KindZeroDivision, "division by zero")
	}
	q, _ := new(big.Rat).SetFrac(a, b).Float64()
	if math.IsInf(q, 0) {
		return Value{}, errf(KindOverflow, "integer division result too large for a float")
	}
	return Float(q), nil
}

func bigOp(op string, a, b *big.Int) (Value, error) {
	switch op {
	case "+":
		return bigValue(new(big.Int).Add(a, b)), nil
	case "-":
		return bigValue(new(big.Int).Sub(a, b)), nil
	case "*":
		if a.BitLen()+b.BitLen() > maxIntBits {
			return Value{}, errf(KindOverflow, "integer result too large")
		}
		return bigValue(new(big.Int).Mul(a, b)), nil
	case "/":
		return bigTrueDiv(a, b)
	case "//", "%":
		if b.Sign() == 0 {
			return Value{}, errf(KindZeroDivision, "integer division or modulo by zero")
		}
		q, m := new(big.Int).DivMod(a, b, new(big.Int)) // Euclidean
		if m.Sign() != 0 && b.Sign() < 0 {
			q.Add(q, big.NewInt(1))
			m.Add(m, b)
		}
		if op == "//" {
			return bigValue(q), nil
		}
		return bigValue(m), nil
	case "**":
		if b.Sign() < 0 {
			fa, _ := new(big.Float).SetInt(a).Float64()
			fb, _ := new(big.Float).SetInt(b).Float64()
			if fa == 0 {
				return Value{}, errf(KindZeroDivision, "0.0 cannot be raised to a negative power")
			}
			return floatOp("**", fa, fb)
		}
		if a.BitLen() > 1 || (a.Sign() < 0 && a.BitLen() > 1) {
			if !b.IsInt64() || int64(a.BitLen())*b.Int64() > maxIntBits {
				return Value{}, errf(KindOverflow, "integer result too large")
			}
		}
		if !b.IsInt64() {
			// base is -1, 0 or 1
			if a.Sign() < 0 && b.Bit(0) == 0 {
				return Int(1), nil
			}
			return bigValue(a), nil
		}
		return bigValue(new(big.Int).Exp(a, b, nil)), nil
	}
	return Value{}, errf(KindType, "unsupported operand %s", op)
}

func floatOp(op string, a, b float64) (Value, error) {
	switch op {
	case "+":
		return Float(a + b), nil
	case "-":
		return Float(a - b), nil
	case "*":
		return Float(a * b), nil
	case "/":
		if b == 0 {
			return Value{}, errf(KindZeroDivision, "float division by zero")
		}
		return Float(a / b), nil
	case "//", "%":
		if b == 0 {
			if op == "//" {
				return Value{}, errf(KindZeroDivision, "float floor division by zero")
			}
			return Value{}, errf(KindZeroDivision, "float modulo")
		}
		m := math.Mod(a, b)
		if m != 0 && ((m < 0) != (b < 0)) {
			m += b
		} else if m == 0 {
			m = math.Copysign(0, b)
		}
		if op == "%" {
			return Float(m), nil
		}
		d := (a - m) / b
		if d != 0 {
			fd := math.Floor(d)
			if d-fd > 0.5 {
				fd++
			}
			d = fd
		} else {
			d = math.Copysign(0, a/b)
		}
		return Float(d), nil
	case "**":
		if a == 0 && b < 0 {
			return Value{}, errf(KindZeroDivision, "0.0 cannot be raised to a negative power")
		}
		if a < 0 && b != math.Trunc(b) {
			return Value{}, errf(KindValue, "complex result not supported")
		}
		r := pow(a, b)
		if math.IsInf(r, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
			return Value{}, errf(KindOverflow, "(34, 'Numerical result out of range')")
		}
		return Float(r), nil
	}
	return Value{}, errf(KindType, "unsupported operand %s", op)
}

// pow is C's pow as CPython calls it. For integral exponents the result
// is computed with 256-bit intermediates and rounded once, which matches
// glibc's correctly rounded pow; other exponents use math.Pow, which may
// differ from glibc in the last bit.
func pow(x, y float64) float64 {
	if y != math.Trunc(y) || math.Abs(y) > 1<<20 || x == 0 || math.IsInf(x, 0) || math.IsNaN(x) || y == 0 {
		return math.Pow(x, y)
	}
	n := int64(math.Abs(y))
	base := new(big.Float).SetPrec(256).SetFloat64(x)
	acc := new(big.Float).SetPrec(256).SetFloat64(1)
	for n > 0 {
		if n&1 == 1 {
			acc.Mul(acc, base)
		}
		n >>= 1
		if n > 0 {
			base.Mul(base, base)
		}
	}
	if y < 0 {
		acc.Quo(new(big.Float).SetPrec(256).SetFloat64(1), acc)
	}
	f, _ := acc.Float64()
	return f
}

func compareOp(op string, l, r Value) (bool, error) {
	switch op {
	case "==":
		return valuesEqual(l, r), nil
	case "!=":
		return !valuesEqual(l, r), nil
	case "in":
		return contains(r, l)
	case "notin":
		ok, err := contains(r, l)
		return !ok, err
	}
	c, err := compareValues(l, r, op)
	if err != nil {
		return false, err
	}
	switch op {
	case "<":
		return c == -1, nil
	case "<=":
		return c == -1 || c == 0, nil
	case ">":
		return c == 1, nil
	}
	return c == 1 || c == 0, nil
}

// contains is Python's `item in container`.
func contains(container, item Value) (bool, error) {
	switch container.k {
	case kString:
		if item.k != kString {
			return false, errf(KindType, "'in <string>' requires string as left operand, not %s", item.typeName())
		}
		return strings.Contains(container.s, item.s), nil
	case kList, kTuple:
		for _, it := range container.list() {
			if valuesEqual(it, item) {
				return true, nil
			}
		}
		return false, nil
	case kMap:
		if !hashable(item) {
			return false, errf(KindType, "unhashable type: '%s'", item.typeName())
		}
		_, ok := container.mapv().get(item)
		return ok, nil
	case kUndefined:
		return false, nil
	}
	return false, errf(KindType, "argument of type '%s' is not iterable", container.typeName())
}

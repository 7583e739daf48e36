package jinja

import (
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/stitchllm/stitch/internal/pyfmt"
)

func filterAbs(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	switch v.k {
	case kInt, kBool, kBig:
		if v.k == kBig || v.n < 0 {
			if v.k == kBig && v.bigInt().Sign() >= 0 {
				return v, nil
			}
			return negate(v)
		}
		return Int(v.n), nil
	case kFloat:
		return Float(math.Abs(v.float())), nil
	case kUndefined:
		return Value{}, undefinedError(v)
	}
	return Value{}, errf(KindType, "bad operand type for abs(): '%s'", v.typeName())
}

// pyFloatParse is Python's float(str).
func pyFloatParse(s string) (float64, bool) { return pyfmt.ParseFloat(s) }

func toPyFloat(v Value) (float64, bool) {
	switch v.k {
	case kInt, kBool, kBig, kFloat:
		return toFloat(v), true
	case kString:
		return pyFloatParse(v.s)
	}
	return 0, false
}

func filterFloat(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("float", args, kw, "default")
	if err != nil {
		return Value{}, err
	}
	if f, ok := toPyFloat(v); ok {
		return Float(f), nil
	}
	if a[0].k == kUndefined {
		return Float(0), nil
	}
	return a[0], nil
}

// pyIntParse is Python's int(str, base) for base 10 and prefixes.
func pyIntParse(s string, base int) (Value, bool) {
	t := strings.TrimFunc(s, isPySpace)
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	if base == 0 || base == 16 || base == 8 || base == 2 {
		if len(t) > 2 && t[0] == '0' {
			pb := map[byte]int{'x': 16, 'o': 8, 'b': 2}[t[1]|0x20]
			if pb != 0 && (base == 0 || base == pb) {
				base = pb
				t = strings.TrimPrefix(t[2:], "_")
			}
		}
		if base == 0 {
			base = 10
		}
	}
	if t == "" || strings.HasPrefix(t, "_") || strings.HasSuffix(t, "_") || strings.Contains(t, "__") {
		return Value{}, false
	}
	t = strings.ReplaceAll(t, "_", "")
	b, ok := new(big.Int).SetString(t, base)
	if !ok {
		return Value{}, false
	}
	if neg {
		b.Neg(b)
	}
	return bigValue(b), true
}

func filterInt(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("int", args, kw, "default", "base")
	if err != nil {
		return Value{}, err
	}
	def := a[0]
	if def.k == kUndefined {
		def = Int(0)
	}
	base := 10
	if a[1].k != kUndefined {
		if !a[1].isInt() {
			return def, nil
		}
		base = clampInt(a[1].n)
	}
	switch v.k {
	case kInt, kBig:
		return v, nil
	case kBool:
		return Int(v.n), nil
	case kFloat:
		return floatToInt(v.float())
	case kString:
		if r, ok := pyIntParse(v.s, base); ok {
			return r, nil
		}
		if f, ok := pyFloatParse(v.s); ok {
			return floatToInt(f)
		}
	}
	return def, nil
}

func floatToInt(f float64) (Value, error) {
	if math.IsInf(f, 0) {
		return Value{}, errf(KindOverflow, "cannot convert float infinity to integer")
	}
	if math.IsNaN(f) {
		return Value{}, errf(KindValue, "cannot convert float NaN to integer")
	}
	f = math.Trunc(f)
	if math.Abs(f) < 1<<62 {
		return Int(int64(f)), nil
	}
	b, _ := new(big.Float).SetFloat64(f).Int(nil)
	return bigValue(b), nil
}

func filterMinMax(ev *evaluator, v Value, args []Value, kw []kwArg, sign int) (Value, error) {
	a, err := argSpec("min/max", args, kw, "case_sensitive", "attribute")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	if len(items) == 0 {
		return undefined("No aggregated item, sequence was empty."), nil
	}
	get, _ := attrGetter(a[1], nil, !a[0].truth())
	best := items[0]
	bk, err := get(best)
	if err != nil {
		return Value{}, err
	}
	for _, it := range items[1:] {
		k, err := get(it)
		if err != nil {
			return Value{}, err
		}
		c, err := compareValues(k, bk, map[int]string{1: ">", -1: "<"}[sign])
		if err != nil {
			return Value{}, err
		}
		if c == sign {
			best, bk = it, k
		}
	}
	return best, nil
}

func filterRound(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("round", args, kw, "precision", "method")
	if err != nil {
		return Value{}, err
	}
	prec := 0
	if a[0].k != kUndefined {
		if !a[0].isInt() {
			return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", a[0].typeName())
		}
		prec = clampInt(a[0].n)
	}
	method := "common"
	if a[1].k == kString {
		method = a[1].s
	}
	if !v.isNumber() {
		return Value{}, errf(KindType, "type %s doesn't define __round__ method", v.typeName())
	}
	switch method {
	case "common":
		if v.isInt() {
			if v.k == kBool {
				v = Int(v.n)
			}
			if prec >= 0 {
				return v, nil
			}
			return roundIntHalfEven(v.bigInt(), -prec), nil
		}
		return Float(pyRound(v.float(), prec)), nil
	case "floor", "ceil":
		p := math.Pow(10, float64(prec))
		x := toFloat(v) * p
		if method == "floor" {
			x = math.Floor(x)
		} else {
			x = math.Ceil(x)
		}
		return Float(x / p), nil
	}
	return Value{}, errf(KindRuntime, "method must be common, ceil or floor")
}

// roundIntHalfEven is Python's round(int, -digits).
func roundIntHalfEven(b *big.Int, digits int) Value {
	if digits > 4000 {
		return Int(0)
	}
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)
	q, r := new(big.Int).DivMod(b, p, new(big.Int))
	twice := new(big.Int).Lsh(r, 1)
	if c := twice.Cmp(p); c > 0 || (c == 0 && q.Bit(0) == 1) {
		q.Add(q, big.NewInt(1))
	}
	return bigValue(q.Mul(q, p))
}

// pyRound is Python's round(float, ndigits): exact round-half-even on the
// decimal expansion of the binary value.
func pyRound(f float64, nd int) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) || f == 0 {
		return f
	}
	if nd > 320 {
		return f
	}
	if nd < -320 {
		return math.Copysign(0, f)
	}
	// Exact decimal expansion of f.
	bf := new(big.Float).SetPrec(2000).SetFloat64(f)
	s := bf.Text('f', 1100)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	point := len(intPart) + nd // number of digits kept
	if point < 0 {
		return math.Copysign(0, f)
	}
	if point >= len(digits) {
		return f
	}
	kept := new(big.Int)
	if point > 0 {
		kept.SetString(digits[:point], 10)
	}
	rest := strings.TrimRight(digits[point:], "0")
	roundUp := false
	if rest != "" {
		switch {
		case rest[0] > '5':
			roundUp = true
		case rest[0] == '5':
			roundUp = len(rest) > 1 || kept.Bit(0) == 1
		}
	}
	if roundUp {
		kept.Add(kept, big.NewInt(1))
	}
	str := kept.String()
	var out string
	if nd >= 0 {
		out = str + "e-" + strconv.Itoa(nd)
	} else {
		out = str + "e" + strconv.Itoa(-nd)
	}
	r, _ := strconv.ParseFloat(out, 64)
	if neg {
		r = -r
	}
	return r
}

func filterSum(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("sum", args, kw, "attribute", "start")
	if err != nil {
		return Value{}, err
	}
	items, err := ev.iterate(v)
	if err != nil {
		return Value{}, err
	}
	total := Int(0)
	if a[1].k != kUndefined {
		total = a[1]
	}
	get, _ := attrGetter(a[0], nil, false)
	for _, it := range items {
		x, err := get(it)
		if err != nil {
			return Value{}, err
		}
		if total, err = binaryOp("+", total, x); err != nil {
			return Value{}, err
		}
	}
	return total, nil
}

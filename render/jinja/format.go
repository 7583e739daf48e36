package jinja

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyFormat is Python's printf-style `s % arg`.
func pyFormat(s string, arg Value) (string, error) {
	var args []Value
	var mapping *Map
	listArg := false
	switch arg.k {
	case kTuple:
		args = arg.list()
	case kMap:
		mapping = arg.mapv()
		args = []Value{arg}
	case kList:
		// A list passes CPython's PyMapping_Check: leftover arguments are
		// not an error, and %(key)s subscripts the list.
		listArg = true
		args = []Value{arg}
	default:
		args = []Value{arg}
	}
	next := 0
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			return "", errf(KindValue, "incomplete format")
		}
		var val Value
		haveVal := false
		if s[i] == '(' {
			if listArg {
				return "", errf(KindType, "list indices must be integers or slices, not str")
			}
			if mapping == nil {
				return "", errf(KindType, "format requires a mapping")
			}
			depth, j := 1, i+1
			for j < len(s) && depth > 0 {
				if s[j] == '(' {
					depth++
				} else if s[j] == ')' {
					depth--
				}
				j++
			}
			if depth > 0 {
				return "", errf(KindValue, "incomplete format key")
			}
			key := s[i+1 : j-1]
			v, ok := mapping.getStr(key)
			if !ok {
				return "", errf(KindKey, "%s", pyReprString(key))
			}
			val, haveVal = v, true
			i = j
		}
		var flags string
		for i < len(s) && strings.IndexByte("-+ #0", s[i]) >= 0 {
			flags += s[i : i+1]
			i++
		}
		takeNum := func() (int, bool, error) {
			if i < len(s) && s[i] == '*' {
				i++
				if next >= len(args) {
					return 0, false, errf(KindType, "not enough arguments for format string")
				}
				a := args[next]
				next++
				if !a.isInt() {
					return 0, false, errf(KindType, "* wants int")
				}
				return clampInt(a.n), true, nil
			}
			st := i
			for i < len(s) && isDigit(s[i]) {
				i++
			}
			if st == i {
				return 0, false, nil
			}
			n, _ := strconv.Atoi(s[st:i])
			if n > maxRepeat {
				return 0, false, errf(KindValue, "width too big")
			}
			return n, true, nil
		}
		width, _, err := takeNum()
		if err != nil {
			return "", err
		}
		prec, hasPrec := -1, false
		if i < len(s) && s[i] == '.' {
			i++
			p, _, err := takeNum()
			if err != nil {
				return "", err
			}
			prec, hasPrec = p, true
		}
		for i < len(s) && (s[i] == 'h' || s[i] == 'l' || s[i] == 'L') {
			i++
		}
		if i >= len(s) {
			return "", errf(KindValue, "incomplete format")
		}
		conv := s[i]
		if conv == '%' {
			b.WriteByte('%')
			continue
		}
		if !haveVal {
			if mapping != nil {
				val = arg
			} else {
				if next >= len(args) {
					return "", errf(KindType, "not enough arguments for format string")
				}
				val = args[next]
				next++
			}
		}
		out, err := formatOne(conv, flags, prec, hasPrec, val)
		if err != nil {
			return "", err
		}
		b.WriteString(padField(out, width, flags, conv))
	}
	if mapping == nil && !listArg && next < len(args) {
		return "", errf(KindType, "not all arguments converted during string formatting")
	}
	return b.String(), nil
}

func padField(out string, width int, flags string, conv byte) string {
	n := runeLen(out)
	if width <= n {
		return out
	}
	pad := width - n
	switch {
	case strings.Contains(flags, "-"):
		return out + strings.Repeat(" ", pad)
	case strings.Contains(flags, "0") && strings.IndexByte("diueEfFgGxXo", conv) >= 0:
		sign := ""
		if out != "" && (out[0] == '-' || out[0] == '+' || out[0] == ' ') {
			sign, out = out[:1], out[1:]
		}
		return sign + strings.Repeat("0", pad) + out
	}
	return strings.Repeat(" ", pad) + out
}

func signed(s string, neg bool, flags string) string {
	switch {
	case neg:
		return "-" + s
	case strings.Contains(flags, "+"):
		return "+" + s
	case strings.Contains(flags, " "):
		return " " + s
	}
	return s
}

func formatOne(conv byte, flags string, prec int, hasPrec bool, v Value) (string, error) {
	switch conv {
	case 's', 'r', 'a':
		var s string
		if conv == 's' {
			s = v.str()
		} else {
			s = v.repr()
		}
		if hasPrec && prec < runeLen(s) {
			s = string([]rune(s)[:prec])
		}
		return s, nil
	case 'c':
		switch {
		case v.k == kString && runeLen(v.s) == 1:
			return v.s, nil
		case v.isInt():
			if v.k == kBig || v.n < 0 || v.n > 0x10ffff {
				return "", errf(KindOverflow, "%%c arg not in range(0x110000)")
			}
			r := rune(v.n)
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			return string(r), nil
		}
		return "", errf(KindType, "%%c requires an int or a unicode character, not %s", v.typeName())
	case 'd', 'i', 'u', 'x', 'X', 'o':
		var iv Value
		switch {
		case v.isInt():
			iv = v
			if v.k == kBool {
				iv = Int(v.n)
			}
		case v.k == kFloat && (conv == 'd' || conv == 'i' || conv == 'u'):
			var err error
			if iv, err = floatToInt(v.float()); err != nil {
				return "", err
			}
		default:
			if conv == 'd' || conv == 'i' || conv == 'u' {
				return "", errf(KindType, "%%%c format: a real number is required, not %s", conv, v.typeName())
			}
			return "", errf(KindType, "%%%c format: an integer is required, not %s", conv, v.typeName())
		}
		b := iv.bigInt()
		neg := b.Sign() < 0
		abs := b.Abs(b)
		var s string
		switch conv {
		case 'x':
			s = abs.Text(16)
			if strings.Contains(flags, "#") {
				s = "0x" + s
			}
		case 'X':
			s = strings.ToUpper(abs.Text(16))
			if strings.Contains(flags, "#") {
				s = "0X" + s
			}
		case 'o':
			s = abs.Text(8)
			if strings.Contains(flags, "#") {
				s = "0o" + s
			}
		default:
			s = abs.String()
		}
		if hasPrec && len(s) < prec {
			s = strings.Repeat("0", prec-len(s)) + s
		}
		return signed(s, neg, flags), nil
	case 'e', 'E', 'f', 'F', 'g', 'G':
		f, ok := toPyFloat(v)
		if !ok || v.k == kString {
			return "", errf(KindType, "must be real number, not %s", v.typeName())
		}
		if !hasPrec {
			prec = 6
		}
		return signed(formatFloatC(math.Abs(f), conv, prec, strings.Contains(flags, "#")), math.Signbit(f) && !math.IsNaN(f), flags), nil
	}
	return "", errf(KindValue, "unsupported format character '%c' (0x%x)", conv, conv)
}

// formatFloatC formats a non-negative f like C's printf %e/%f/%g.
func formatFloatC(f float64, conv byte, prec int, alt bool) string {
	upper := conv == 'E' || conv == 'F' || conv == 'G'
	if math.IsInf(f, 0) || math.IsNaN(f) {
		s := "inf"
		if math.IsNaN(f) {
			s = "nan"
		}
		if upper {
			s = strings.ToUpper(s)
		}
		return s
	}
	var s string
	switch conv | 0x20 {
	case 'e':
		s = strconv.FormatFloat(f, 'e', prec, 64)
	case 'f':
		s = strconv.FormatFloat(f, 'f', prec, 64)
	default:
		if prec == 0 {
			prec = 1
		}
		s = strconv.FormatFloat(f, 'e', prec-1, 64)
		mant, exps, _ := strings.Cut(s, "e")
		exp, _ := strconv.Atoi(exps)
		_ = mant
		if exp >= -4 && exp < prec {
			s = strconv.FormatFloat(f, 'f', prec-1-exp, 64)
		}
		if !alt && strings.Contains(s, ".") {
			m, e, hasE := strings.Cut(s, "e")
			m = strings.TrimRight(strings.TrimRight(m, "0"), ".")
			if hasE {
				s = m + "e" + e
			} else {
				s = m
			}
		}
	}
	if upper {
		s = strings.ToUpper(s)
	}
	return s
}

// strDotFormat is a subset of Python's str.format: automatic and
// explicit positional fields, keyword fields, attribute and index
// lookups, !s/!r conversions and format specs.
func strDotFormat(s string, args []Value, kw []kwArg) (string, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '}' {
			if i+1 < len(s) && s[i+1] == '}' {
				b.WriteByte('}')
				i++
				continue
			}
			return "", errf(KindValue, "Single '}' encountered in format string")
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", errf(KindValue, "expected '}' before end of string")
		}
		field := s[i+1 : i+j]
		i += j
		spec := ""
		if k := strings.IndexByte(field, ':'); k >= 0 {
			field, spec = field[:k], field[k+1:]
		}
		conv := byte(0)
		if k := strings.IndexByte(field, '!'); k >= 0 {
			if k+2 != len(field) {
				return "", errf(KindValue, "expected ':' after conversion specifier")
			}
			conv = field[k+1]
			field = field[:k]
		}
		name := field
		rest := ""
		if k := strings.IndexAny(field, ".["); k >= 0 {
			name, rest = field[:k], field[k:]
		}
		var v Value
		if name == "" {
			if auto >= len(args) {
				return "", errf(KindIndex, "Replacement index %d out of range for positional args tuple", auto)
			}
			v = args[auto]
			auto++
		} else if n, err := strconv.Atoi(name); err == nil {
			if n >= len(args) {
				return "", errf(KindIndex, "Replacement index %d out of range for positional args tuple", n)
			}
			v = args[n]
		} else {
			found := false
			for _, k := range kw {
				if k.name == name {
					v, found = k.v, true
				}
			}
			if !found {
				return "", errf(KindKey, "%s", pyReprString(name))
			}
		}
		for rest != "" {
			if rest[0] == '.' {
				k := strings.IndexAny(rest[1:], ".[")
				attr := rest[1:]
				if k >= 0 {
					attr, rest = rest[1:k+1], rest[k+1:]
				} else {
					rest = ""
				}
				if strings.HasPrefix(attr, "_") {
					return "", errf(KindSecurity, "access to attribute '%s' of '%s' object is unsafe.", attr, v.typeName())
				}
				var err error
				if v, err = getAttr(v, attr); err != nil {
					return "", err
				}
				continue
			}
			k := strings.IndexByte(rest, ']')
			if k < 0 {
				return "", errf(KindValue, "Missing ']' in format string")
			}
			key := rest[1:k]
			rest = rest[k+1:]
			var kv Value = String(key)
			if n, err := strconv.Atoi(key); err == nil {
				kv = Int(int64(n))
			}
			var err error
			if v, err = getItem(v, kv); err != nil {
				return "", err
			}
		}
		switch conv {
		case 'r', 'a':
			v = String(v.repr())
		case 's':
			v = String(v.str())
		case 0:
		default:
			return "", errf(KindValue, "Unknown conversion specifier %c", conv)
		}
		out, err := formatSpec(v, spec)
		if err != nil {
			return "", err
		}
		b.WriteString(out)
	}
	return b.String(), nil
}

// formatSpec is format(v, spec) for the common mini-language subset.
func formatSpec(v Value, spec string) (string, error) {
	if spec == "" {
		return v.str(), nil
	}
	fill, align := " ", byte(0)
	if r, n := utf8.DecodeRuneInString(spec); len(spec) > n && strings.IndexByte("<>^=", spec[n]) >= 0 {
		fill, align, spec = string(r), spec[n], spec[n+1:]
	} else if strings.IndexByte("<>^=", spec[0]) >= 0 {
		align, spec = spec[0], spec[1:]
	}
	sign := ""
	if spec != "" && strings.IndexByte("+- ", spec[0]) >= 0 {
		sign, spec = spec[:1], spec[1:]
	}
	if spec != "" && spec[0] == '0' {
		if align == 0 {
			fill, align = "0", '='
		}
		spec = spec[1:]
	}
	p := 0
	for p < len(spec) && isDigit(spec[p]) {
		p++
	}
	width, _ := strconv.Atoi(spec[:p])
	if width > maxRepeat {
		return "", errf(KindValue, "Too many decimal digits in format string")
	}
	spec = spec[p:]
	prec, hasPrec := 0, false
	if spec != "" && spec[0] == '.' {
		p = 1
		for p < len(spec) && isDigit(spec[p]) {
			p++
		}
		prec, _ = strconv.Atoi(spec[1:p])
		hasPrec = true
		spec = spec[p:]
	}
	typ := byte(0)
	if len(spec) == 1 {
		typ = spec[0]
	} else if len(spec) > 1 {
		return "", errf(KindValue, "Invalid format specifier")
	}
	var out string
	numeric := v.isNumber()
	switch {
	case v.k == kString:
		if typ != 0 && typ != 's' {
			return "", errf(KindValue, "Unknown format code '%c' for object of type 'str'", typ)
		}
		out = v.s
		if hasPrec && prec < runeLen(out) {
			out = string([]rune(out)[:prec])
		}
		if align == 0 {
			align = '<'
		}
	case numeric:
		flags := sign
		switch typ {
		case 0, 'd', 'n':
			if typ != 0 || v.isInt() {
				if !v.isInt() {
					return "", errf(KindValue, "Unknown format code 'd' for object of type 'float'")
				}
				var err error
				if out, err = formatOne('d', flags, -1, false, v); err != nil {
					return "", err
				}
			} else if hasPrec {
				out = signed(formatFloatC(math.Abs(v.float()), 'g', prec, false), math.Signbit(v.float()), flags)
			} else {
				out = signed(formatFloat(math.Abs(v.float())), math.Signbit(v.float()), flags)
			}
		case '%':
			if !hasPrec {
				prec = 6
			}
			f := toFloat(v) * 100
			out = signed(formatFloatC(math.Abs(f), 'f', prec, false), math.Signbit(f), flags) + "%"
		case 'x', 'X', 'o', 'b', 'c':
			if !v.isInt() {
				return "", errf(KindValue, "Unknown format code '%c' for object of type 'float'", typ)
			}
			if typ == 'b' {
				b := v.bigInt()
				out = signed(new(bigIntAbs).abs(b).Text(2), b.Sign() < 0, flags)
			} else {
				var err error
				if out, err = formatOne(typ, flags, -1, false, v); err != nil {
					return "", err
				}
			}
		default:
			if strings.IndexByte("eEfFgG", typ) < 0 {
				return "", errf(KindValue, "Unknown format code '%c' for object of type '%s'", typ, v.typeName())
			}
			if !hasPrec {
				prec = 6
			}
			f := toFloat(v)
			out = signed(formatFloatC(math.Abs(f), typ, prec, false), math.Signbit(f), flags)
		}
		if align == 0 {
			align = '>'
		}
	default:
		if typ != 0 || sign != "" {
			return "", errf(KindType, "unsupported format string passed to %s.__format__", v.typeName())
		}
		out = v.str()
		if align == 0 {
			align = '<'
		}
	}
	n := runeLen(out)
	if width <= n {
		return out, nil
	}
	pad := width - n
	switch align {
	case '<':
		return out + strings.Repeat(fill, pad), nil
	case '>':
		return strings.Repeat(fill, pad) + out, nil
	case '^':
		return strings.Repeat(fill, pad/2) + out + strings.Repeat(fill, pad-pad/2), nil
	}
	sg := ""
	if out != "" && (out[0] == '-' || out[0] == '+' || out[0] == ' ') {
		sg, out = out[:1], out[1:]
	}
	return sg + strings.Repeat(fill, pad) + out, nil
}

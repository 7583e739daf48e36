package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

func decodeRune(s string, i int) (rune, int) { return utf8.DecodeRuneInString(s[i:]) }

func decodeLastRune(s string) (rune, int) { return utf8.DecodeLastRuneInString(s) }

var strMethods = buildStrMethods()

var listMethods = map[string]methodFn{
	"index": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("index", args, kw, 1, 3); err != nil {
			return Value{}, err
		}
		for i, it := range recv.list() {
			if valuesEqual(it, args[0]) {
				return Int(int64(i)), nil
			}
		}
		return Value{}, errf(KindValue, "%s is not in list", args[0].repr())
	},
	"count": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("count", args, kw, 1, 1); err != nil {
			return Value{}, err
		}
		n := 0
		for _, it := range recv.list() {
			if valuesEqual(it, args[0]) {
				n++
			}
		}
		return Int(int64(n)), nil
	},
	"copy": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("copy", args, kw, 0, 0); err != nil {
			return Value{}, err
		}
		return List(append([]Value(nil), recv.list()...)...), nil
	},
}

var dictMethods = map[string]methodFn{
	"get": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("get", args, kw, 1, 2); err != nil {
			return Value{}, err
		}
		if !hashable(args[0]) {
			return Value{}, errf(KindType, "unhashable type: '%s'", args[0].typeName())
		}
		if v, ok := recv.mapv().get(args[0]); ok {
			return v, nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return None(), nil
	},
	"items": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("items", args, kw, 0, 0); err != nil {
			return Value{}, err
		}
		return dictItems(recv.mapv()), nil
	},
	"keys": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("keys", args, kw, 0, 0); err != nil {
			return Value{}, err
		}
		return Value{k: kList, o: &listObj{items: recv.mapv().keys, view: "dict_keys"}}, nil
	},
	"values": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("values", args, kw, 0, 0); err != nil {
			return Value{}, err
		}
		return Value{k: kList, o: &listObj{items: recv.mapv().vals, view: "dict_values"}}, nil
	},
	"copy": func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs("copy", args, kw, 0, 0); err != nil {
			return Value{}, err
		}
		return MapValue(recv.mapv().clone()), nil
	},
}

func dictItems(m *Map) Value {
	items := make([]Value, len(m.keys))
	for i := range m.keys {
		items[i] = tuple(m.keys[i], m.vals[i])
	}
	return Value{k: kList, o: &listObj{items: items, view: "dict_items"}}
}

func strMethod(f func(s string, args []Value, kw []kwArg) (Value, error)) methodFn {
	return func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		return f(recv.s, args, kw)
	}
}

func simpleStr(name string, f func(string) string) methodFn {
	return strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs(name, args, kw, 0, 0); err != nil {
			return Value{}, err
		}
		return String(f(s)), nil
	})
}

func predStr(name string, f func(rune) bool) methodFn {
	return strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs(name, args, kw, 0, 0); err != nil {
			return Value{}, err
		}
		return Bool(allRunes(s, f)), nil
	})
}

func stripMethod(name string, left, right bool) methodFn {
	return strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs(name, args, kw, 0, 1); err != nil {
			return Value{}, err
		}
		chars, has, err := optChars(name, args)
		if err != nil {
			return Value{}, err
		}
		return String(pyStrip(s, chars, has, left, right)), nil
	})
}

func affixMethod(name string, suffix bool) methodFn {
	return strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs(name, args, kw, 1, 3); err != nil {
			return Value{}, err
		}
		ps, err := prefixes(name, args[0])
		if err != nil {
			return Value{}, err
		}
		sub, start, err := clampRuneRange(s, args[1:])
		if err != nil {
			return Value{}, err
		}
		if start < 0 {
			return Bool(false), nil
		}
		for _, p := range ps {
			if (suffix && strings.HasSuffix(sub, p)) || (!suffix && strings.HasPrefix(sub, p)) {
				return Bool(true), nil
			}
		}
		return Bool(false), nil
	})
}

func findMethod(name string, last, raise bool) methodFn {
	return strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs(name, args, kw, 1, 3); err != nil {
			return Value{}, err
		}
		sub, err := needStr(name, args[0])
		if err != nil {
			return Value{}, err
		}
		hay, start, err := clampRuneRange(s, args[1:])
		if err != nil {
			return Value{}, err
		}
		i := -1
		if start >= 0 {
			if last {
				i = strings.LastIndex(hay, sub)
			} else {
				i = strings.Index(hay, sub)
			}
		}
		if i < 0 {
			if raise {
				return Value{}, errf(KindValue, "substring not found")
			}
			return Int(-1), nil
		}
		return Int(int64(start + byteToRune(hay, i))), nil
	})
}

func splitMethod(name string, right bool) methodFn {
	return strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
		a, err := argSpec(name, args, kw, "sep", "maxsplit")
		if err != nil {
			return Value{}, err
		}
		max, err := maxSplitArg(a[1])
		if err != nil {
			return Value{}, err
		}
		if a[0].k == kUndefined && a[0].s == "" || a[0].k == kNone {
			if right {
				return List(pyRSplitWhitespace(s, max)...), nil
			}
			return List(pySplitWhitespace(s, max)...), nil
		}
		sep, err := needStr(name, a[0])
		if err != nil {
			return Value{}, err
		}
		if sep == "" {
			return Value{}, errf(KindValue, "empty separator")
		}
		if max < 0 {
			return strList(strings.Split(s, sep)), nil
		}
		if !right {
			return strList(strings.SplitN(s, sep, max+1)), nil
		}
		var rev []string
		for len(rev) < max {
			i := strings.LastIndex(s, sep)
			if i < 0 {
				break
			}
			rev = append(rev, s[i+len(sep):])
			s = s[:i]
		}
		rev = append(rev, s)
		for x, y := 0, len(rev)-1; x < y; x, y = x+1, y-1 {
			rev[x], rev[y] = rev[y], rev[x]
		}
		return strList(rev), nil
	})
}

func partitionMethod(name string, right bool) methodFn {
	return strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
		if err := needArgs(name, args, kw, 1, 1); err != nil {
			return Value{}, err
		}
		sep, err := needStr(name, args[0])
		if err != nil {
			return Value{}, err
		}
		if sep == "" {
			return Value{}, errf(KindValue, "empty separator")
		}
		var i int
		if right {
			i = strings.LastIndex(s, sep)
			if i < 0 {
				return tuple(String(""), String(""), String(s)), nil
			}
		} else {
			i = strings.Index(s, sep)
			if i < 0 {
				return tuple(String(s), String(""), String("")), nil
			}
		}
		return tuple(String(s[:i]), String(sep), String(s[i+len(sep):])), nil
	})
}

// strMethodTable is built lazily in a function rather than a package
// init so that the table can refer to the helpers above.
func buildStrMethods() map[string]methodFn {
	return map[string]methodFn{
		"upper":      simpleStr("upper", pyUpper),
		"lower":      simpleStr("lower", pyLower),
		"casefold":   simpleStr("casefold", pyLower),
		"title":      simpleStr("title", pyTitle),
		"capitalize": simpleStr("capitalize", pyCapitalize),
		"swapcase": simpleStr("swapcase", func(s string) string {
			return strings.Map(func(r rune) rune {
				if unicode.IsUpper(r) {
					return unicode.ToLower(r)
				}
				return unicode.ToUpper(r)
			}, s)
		}),
		"strip":      stripMethod("strip", true, true),
		"lstrip":     stripMethod("lstrip", true, false),
		"rstrip":     stripMethod("rstrip", false, true),
		"startswith": affixMethod("startswith", false),
		"endswith":   affixMethod("endswith", true),
		"find":       findMethod("find", false, false),
		"rfind":      findMethod("rfind", true, false),
		"index":      findMethod("index", false, true),
		"rindex":     findMethod("rindex", true, true),
		"split":      splitMethod("split", false),
		"rsplit":     splitMethod("rsplit", true),
		"partition":  partitionMethod("partition", false),
		"rpartition": partitionMethod("rpartition", true),
		"isdigit":    predStr("isdigit", unicode.IsDigit),
		"isdecimal":  predStr("isdecimal", func(r rune) bool { return unicode.Is(unicode.Nd, r) }),
		"isnumeric":  predStr("isnumeric", unicode.IsNumber),
		"isalpha":    predStr("isalpha", unicode.IsLetter),
		"isalnum": predStr("isalnum", func(r rune) bool {
			return unicode.IsLetter(r) || unicode.IsNumber(r)
		}),
		"isspace": predStr("isspace", isPySpace),
		"isupper": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			return Bool(hasCased(s) && pyLower(s) != s && pyUpper(s) == s), needArgs("isupper", args, kw, 0, 0)
		}),
		"islower": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			return Bool(hasCased(s) && pyUpper(s) != s && pyLower(s) == s), needArgs("islower", args, kw, 0, 0)
		}),
		"splitlines": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			a, err := argSpec("splitlines", args, kw, "keepends")
			if err != nil {
				return Value{}, err
			}
			return List(splitLines(s, a[0].truth())...), nil
		}),
		"join": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			if err := needArgs("join", args, kw, 1, 1); err != nil {
				return Value{}, err
			}
			items, err := (&evaluator{}).iterate(args[0])
			if err != nil {
				return Value{}, err
			}
			parts := make([]string, len(items))
			for i, it := range items {
				if it.k != kString {
					return Value{}, errf(KindType, "sequence item %d: expected str instance, %s found", i, it.typeName())
				}
				parts[i] = it.s
			}
			return String(strings.Join(parts, s)), nil
		}),
		"replace": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			if err := needArgs("replace", args, kw, 2, 3); err != nil {
				return Value{}, err
			}
			old, err := needStr("replace", args[0])
			if err != nil {
				return Value{}, err
			}
			nw, err := needStr("replace", args[1])
			if err != nil {
				return Value{}, err
			}
			n := -1
			if len(args) > 2 {
				if !args[2].isInt() {
					return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", args[2].typeName())
				}
				n = clampInt(args[2].n)
			}
			return String(pyReplace(s, old, nw, n)), nil
		}),
		"count": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			if err := needArgs("count", args, kw, 1, 3); err != nil {
				return Value{}, err
			}
			sub, err := needStr("count", args[0])
			if err != nil {
				return Value{}, err
			}
			hay, start, err := clampRuneRange(s, args[1:])
			if err != nil || start < 0 {
				return Int(0), err
			}
			if sub == "" {
				return Int(int64(runeLen(hay) + 1)), nil
			}
			return Int(int64(strings.Count(hay, sub))), nil
		}),
		"removeprefix": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			if err := needArgs("removeprefix", args, kw, 1, 1); err != nil {
				return Value{}, err
			}
			p, err := needStr("removeprefix", args[0])
			return String(strings.TrimPrefix(s, p)), err
		}),
		"removesuffix": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			if err := needArgs("removesuffix", args, kw, 1, 1); err != nil {
				return Value{}, err
			}
			p, err := needStr("removesuffix", args[0])
			return String(strings.TrimSuffix(s, p)), err
		}),
		"zfill": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) {
			if err := needArgs("zfill", args, kw, 1, 1); err != nil {
				return Value{}, err
			}
			if !args[0].isInt() {
				return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", args[0].typeName())
			}
			w := clampInt(args[0].n)
			n := runeLen(s)
			if w <= n {
				return String(s), nil
			}
			if w > maxRepeat {
				return Value{}, errf(KindOverflow, "width too large")
			}
			sign := ""
			if s != "" && (s[0] == '+' || s[0] == '-') {
				sign, s = s[:1], s[1:]
			}
			return String(sign + strings.Repeat("0", w-n) + s), nil
		}),
		"center": strMethod(func(s string, args []Value, kw []kwArg) (Value, error) { return padStr("center", s, args, kw, 'c') }),
		"ljust":  strMethod(func(s string, args []Value, kw []kwArg) (Value, error) { return padStr("ljust", s, args, kw, 'l') }),
		"rjust":  strMethod(func(s string, args []Value, kw []kwArg) (Value, error) { return padStr("rjust", s, args, kw, 'r') }),
	}
}

func hasCased(s string) bool {
	for _, r := range s {
		if isCased(r) {
			return true
		}
	}
	return false
}

// pyReplace is str.replace, including Python's treatment of an empty
// old string (insert between every code point).
func pyReplace(s, old, nw string, n int) string {
	if old != "" {
		return strings.Replace(s, old, nw, n)
	}
	var b strings.Builder
	count := 0
	for _, r := range s {
		if n < 0 || count < n {
			b.WriteString(nw)
			count++
		}
		b.WriteRune(r)
	}
	if n < 0 || count < n {
		b.WriteString(nw)
	}
	return b.String()
}

func strFormatMethod(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
	s, err := strDotFormat(recv.s, args, kw)
	return String(s), err
}

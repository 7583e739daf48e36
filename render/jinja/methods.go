package jinja

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

type methodFn func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error)

// markupMethods reports the str methods that markupsafe.Markup wraps to
// return Markup.
func markupMethods(name string) bool {
	switch name {
	case "capitalize", "title", "lower", "upper", "replace", "ljust", "rjust", "lstrip", "rstrip",
		"center", "strip", "swapcase", "zfill":
		return true
	}
	return false
}

// listMutator and dictMutator report the methods
// ImmutableSandboxedEnvironment refuses.
func listMutator(name string) bool {
	switch name {
	case "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort":
		return true
	}
	return false
}

func dictMutator(name string) bool {
	switch name {
	case "clear", "pop", "popitem", "setdefault", "update":
		return true
	}
	return false
}

// isDictMethod reports whether name is an attribute of Python's dict
// (so it shadows a key of that name in `d.name`).
func isDictMethod(name string) bool {
	switch name {
	case "get", "items", "keys", "values", "copy", "fromkeys", "clear", "pop", "popitem", "setdefault", "update":
		return true
	}
	return false
}

// methodFunc returns the Python method name of recv's type.
func methodFunc(recv Value, name string) (methodFn, bool) {
	var m methodFn
	switch recv.k {
	case kString:
		if name == "format" {
			return strFormatMethod, true
		}
		m = strMethods[name]
		if m != nil && recv.isMarkup() && markupMethods(name) {
			inner := m
			m = func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
				v, err := inner(ev, recv, args, kw)
				if err == nil && v.k == kString {
					v.n = 1
				}
				return v, err
			}
		}
	case kList, kTuple:
		if recv.k == kList && listMutator(name) {
			return refuse(name), true
		}
		m = listMethods[name]
	case kMap:
		if !isDictMethod(name) {
			return nil, false
		}
		if dictMutator(name) {
			return refuse(name), true
		}
		m = dictMethods[name]
	}
	return m, m != nil
}

func refuse(name string) methodFn {
	return func(ev *evaluator, recv Value, args []Value, kw []kwArg) (Value, error) {
		return Value{}, errf(KindSecurity, "access to attribute '%s' of '%s' object is unsafe.", name, recv.typeName())
	}
}

// methodValue is recv.name as a bound method value.
func methodValue(recv Value, name string) (Value, bool) {
	switch recv.k {
	case kList:
		if listMutator(name) {
			return unsafeUndefined(recv, name), true
		}
	case kMap:
		if dictMutator(name) {
			return unsafeUndefined(recv, name), true
		}
	}
	m, ok := methodFunc(recv, name)
	if !ok {
		return Value{}, false
	}
	return Value{k: kFunc, o: &funcObj{name: name, call: func(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
		return m(ev, recv, args, kw)
	}}}, true
}

// argSpec binds positional and keyword arguments to named parameters;
// it reports a TypeError like Python for too many or unknown arguments.
func argSpec(fname string, args []Value, kw []kwArg, names ...string) ([]Value, error) {
	if len(args) > len(names) {
		return nil, errf(KindType, "%s() takes at most %d arguments (%d given)", fname, len(names), len(args))
	}
	out := make([]Value, len(names))
	copy(out, args)
	for _, k := range kw {
		found := false
		for i, n := range names {
			if n == k.name {
				if i < len(args) {
					return nil, errf(KindType, "%s() got multiple values for argument '%s'", fname, k.name)
				}
				out[i] = k.v
				found = true
			}
		}
		if !found {
			return nil, errf(KindType, "%s() got an unexpected keyword argument '%s'", fname, k.name)
		}
	}
	return out, nil
}

func noKw(fname string, kw []kwArg) error {
	if len(kw) > 0 {
		return errf(KindType, "%s() takes no keyword arguments", fname)
	}
	return nil
}

func needArgs(fname string, args []Value, kw []kwArg, min, max int) error {
	if err := noKw(fname, kw); err != nil {
		return err
	}
	if len(args) < min || len(args) > max {
		if min == max {
			return errf(KindType, "%s() takes exactly %d argument (%d given)", fname, min, len(args))
		}
		return errf(KindType, "%s() takes at least %d argument(s) and at most %d (%d given)", fname, min, max, len(args))
	}
	return nil
}

func needStr(fname string, v Value) (string, error) {
	if v.k != kString {
		if v.k == kUndefined {
			return "", undefinedError(v)
		}
		return "", errf(KindType, "%s() argument must be str, not %s", fname, v.typeName())
	}
	return v.s, nil
}

// optChars reads an optional strip-set argument (None means whitespace).
func optChars(fname string, args []Value) (string, bool, error) {
	if len(args) == 0 || args[0].k == kNone {
		return "", false, nil
	}
	s, err := needStr(fname, args[0])
	return s, true, err
}

func pyStrip(s, chars string, has, left, right bool) string {
	f := isPySpace
	if has {
		f = func(r rune) bool { return strings.ContainsRune(chars, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, f)
	}
	if right {
		s = strings.TrimRightFunc(s, f)
	}
	return s
}

// runeIndex converts a Python (code point) index to a byte offset, with
// Python's clamping of negative and large values.
func clampRuneRange(s string, args []Value) (string, int, error) {
	if len(args) == 0 {
		return s, 0, nil
	}
	n := runeLen(s)
	start, end := 0, n
	if len(args) > 0 && args[0].k != kNone {
		if !args[0].isInt() {
			return "", 0, errf(KindType, "slice indices must be integers or None or have an __index__ method")
		}
		start = clampIdx(args[0], n)
	}
	if len(args) > 1 && args[1].k != kNone {
		if !args[1].isInt() {
			return "", 0, errf(KindType, "slice indices must be integers or None or have an __index__ method")
		}
		end = clampIdx(args[1], n)
	}
	if start > end {
		return "", -1, nil
	}
	if isASCII(s) {
		return s[start:end], start, nil
	}
	rs := []rune(s)
	return string(rs[start:end]), start, nil
}

func clampIdx(v Value, n int) int {
	i := clampInt(v.n)
	if v.k == kBig {
		if v.bigInt().Sign() < 0 {
			i = -n - 1
		} else {
			i = n + 1
		}
	}
	if i < 0 {
		i += n
		if i < 0 {
			i = 0
		}
	}
	if i > n {
		i = n
	}
	return i
}

func byteToRune(s string, b int) int {
	if b < 0 {
		return -1
	}
	return runeLen(s[:b])
}

func prefixes(fname string, v Value) ([]string, error) {
	if v.k == kTuple {
		var out []string
		for _, it := range v.list() {
			s, err := needStr(fname, it)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if v.k != kString {
		return nil, errf(KindType, "%s first arg must be str or a tuple of str, not %s", fname, v.typeName())
	}
	return []string{v.s}, nil
}

func pyUpper(s string) string {
	if isASCII(s) {
		return strings.ToUpper(s)
	}
	return cases.Upper(language.Und).String(s)
}

func pyLower(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	return cases.Lower(language.Und).String(s)
}

func isCased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

// pyTitle is Python's str.title.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteString(pyLower(string(r)))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prevCased = isCased(r)
	}
	return b.String()
}

// pyCapitalize is Python's str.capitalize.
func pyCapitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToTitle(r)) + pyLower(s[i+len(string(r)):])
	}
	return s
}

// pySplitWhitespace is str.split() with no separator.
func pySplitWhitespace(s string, max int) []Value {
	var out []Value
	i := 0
	for {
		for i < len(s) {
			r, n := decodeRune(s, i)
			if !isPySpace(r) {
				break
			}
			i += n
		}
		if i >= len(s) {
			return out
		}
		if max >= 0 && len(out) == max {
			out = append(out, String(s[i:]))
			return out
		}
		j := i
		for j < len(s) {
			r, n := decodeRune(s, j)
			if isPySpace(r) {
				break
			}
			j += n
		}
		out = append(out, String(s[i:j]))
		i = j
	}
}

func pyRSplitWhitespace(s string, max int) []Value {
	var rev []Value
	j := len(s)
	for {
		for j > 0 {
			r, n := decodeLastRune(s[:j])
			if !isPySpace(r) {
				break
			}
			j -= n
		}
		if j <= 0 {
			break
		}
		if max >= 0 && len(rev) == max {
			rev = append(rev, String(s[:j]))
			break
		}
		i := j
		for i > 0 {
			r, n := decodeLastRune(s[:i])
			if isPySpace(r) {
				break
			}
			i -= n
		}
		rev = append(rev, String(s[i:j]))
		j = i
	}
	for a, b := 0, len(rev)-1; a < b; a, b = a+1, b-1 {
		rev[a], rev[b] = rev[b], rev[a]
	}
	return rev
}

func maxSplitArg(v Value) (int, error) {
	if v.k == kUndefined && v.s == "" {
		return -1, nil
	}
	if !v.isInt() {
		return 0, errf(KindType, "'%s' object cannot be interpreted as an integer", v.typeName())
	}
	return clampInt(v.n), nil
}

func strList(ss []string) Value {
	out := make([]Value, len(ss))
	for i, s := range ss {
		out[i] = String(s)
	}
	return List(out...)
}

// isLineBreak reports the separators of Python's str.splitlines.
func isLineBreak(r rune) bool {
	switch r {
	case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

func splitLines(s string, keep bool) []Value {
	var out []Value
	i := 0
	for i < len(s) {
		j := i
		for j < len(s) {
			r, n := decodeRune(s, j)
			if isLineBreak(r) {
				end := j + n
				if r == '\r' && end < len(s) && s[end] == '\n' {
					end++
				}
				if keep {
					out = append(out, String(s[i:end]))
				} else {
					out = append(out, String(s[i:j]))
				}
				i = end
				goto next
			}
			j += n
		}
		out = append(out, String(s[i:]))
		return out
	next:
	}
	return out
}

func allRunes(s string, f func(rune) bool) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !f(r) {
			return false
		}
	}
	return true
}

func padStr(fname string, s string, args []Value, kw []kwArg, mode byte) (Value, error) {
	if err := needArgs(fname, args, kw, 1, 2); err != nil {
		return Value{}, err
	}
	if !args[0].isInt() {
		return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", args[0].typeName())
	}
	fill := " "
	if len(args) > 1 {
		f, err := needStr(fname, args[1])
		if err != nil {
			return Value{}, err
		}
		if runeLen(f) != 1 {
			return Value{}, errf(KindType, "The fill character must be exactly one character long")
		}
		fill = f
	}
	width := clampInt(args[0].n)
	if width > maxRepeat {
		return Value{}, errf(KindOverflow, "width too large")
	}
	n := runeLen(s)
	if width <= n {
		return String(s), nil
	}
	pad := width - n
	switch mode {
	case 'l':
		return String(s + strings.Repeat(fill, pad)), nil
	case 'r':
		return String(strings.Repeat(fill, pad) + s), nil
	}
	left := pad / 2
	if pad%2 == 1 && width%2 == 1 {
		left++
	}
	return String(strings.Repeat(fill, left) + s + strings.Repeat(fill, pad-left)), nil
}

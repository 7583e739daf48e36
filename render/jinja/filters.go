package jinja

import (
	"regexp"
	"strings"
)

// filterFunc implements one filter: v is the piped value.
type filterFunc func(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error)

// lookupFilter returns the builtin filter name, or nil.
func lookupFilter(name string) filterFunc {
	switch name {
	case "abs":
		return filterAbs
	case "attr":
		return filterAttr
	case "batch":
		return filterBatch
	case "capitalize":
		return strFilter(pyCapitalize)
	case "center":
		return filterCenter
	case "count":
		return filterLength
	case "d":
		return filterDefault
	case "default":
		return filterDefault
	case "dictsort":
		return filterDictsort
	case "e":
		return filterEscape
	case "escape":
		return filterEscape
	case "first":
		return filterFirst
	case "float":
		return filterFloat
	case "format":
		return filterFormat
	case "indent":
		return filterIndent
	case "int":
		return filterInt
	case "items":
		return filterItems
	case "join":
		return filterJoin
	case "last":
		return filterLast
	case "length":
		return filterLength
	case "list":
		return filterList
	case "lower":
		return strFilter(pyLower)
	case "map":
		return filterMap
	case "max":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterMinMax(ev, v, a, kw, 1)
		}
	case "min":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterMinMax(ev, v, a, kw, -1)
		}
	case "reject":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, false, false)
		}
	case "rejectattr":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, false, true)
		}
	case "replace":
		return filterReplace
	case "reverse":
		return filterReverse
	case "round":
		return filterRound
	case "safe":
		return filterSafe
	case "forceescape":
		return filterForceEscape
	case "groupby":
		return filterGroupBy
	case "slice":
		return filterSlice
	case "truncate":
		return filterTruncate
	case "select":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, true, false)
		}
	case "selectattr":
		return func(ev *evaluator, v Value, a []Value, kw []kwArg) (Value, error) {
			return filterSelect(ev, v, a, kw, true, true)
		}
	case "sort":
		return filterSort
	case "string":
		return filterString
	case "striptags":
		return filterStriptags
	case "sum":
		return filterSum
	case "title":
		return strFilter(jinjaTitle)
	case "tojson":
		return filterToJSON
	case "trim":
		return filterTrim
	case "unique":
		return filterUnique
	case "upper":
		return strFilter(pyUpper)
	case "wordcount":
		return filterWordcount
	}
	return nil
}

// softStr is Jinja2's soft_str: str(v), "" for Undefined.
func softStr(v Value) (string, error) {
	return v.str(), nil
}

func strFilter(f func(string) string) filterFunc {
	return func(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
		if len(args) > 0 || len(kw) > 0 {
			return Value{}, errf(KindType, "filter takes 1 positional argument but %d were given", len(args)+1)
		}
		s, err := softStr(v)
		return String(f(s)), err
	}
}

var wordBeginningSplit = regexp.MustCompile(`[-\s({\[<]+`)

// jinjaTitle is Jinja2's title filter (not str.title).
func jinjaTitle(s string) string {
	var b strings.Builder
	last := 0
	write := func(item string) {
		for i, r := range item {
			b.WriteString(pyUpper(string(r)))
			b.WriteString(pyLower(item[i+len(string(r)):]))
			return
		}
	}
	for _, loc := range wordBeginningSplit.FindAllStringIndex(s, -1) {
		write(s[last:loc[0]])
		b.WriteString(s[loc[0]:loc[1]])
		last = loc[1]
	}
	write(s[last:])
	return b.String()
}

func filterAttr(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if err := needArgs("attr", args, kw, 1, 1); err != nil {
		return Value{}, err
	}
	name, err := needStr("attr", args[0])
	if err != nil {
		return Value{}, err
	}
	if v.k == kUndefined {
		return Value{}, undefinedError(v)
	}
	if isDunder(name) {
		return unsafeUndefined(v, name), nil
	}
	if m, ok := methodValue(v, name); ok {
		return m, nil
	}
	switch v.k {
	case kNamespace:
		if r, ok := v.mapv().getStr(name); ok {
			return r, nil
		}
	case kLoop:
		if r, ok := loopAttr(v.o.(*loopObj), name); ok {
			return r, nil
		}
	}
	return undefined("'" + v.typeName() + " object' has no attribute '" + name + "'"), nil
}

func filterCenter(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("center", args, kw, "width")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined {
		a[0] = Int(80)
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	return padStr("center", s, a[:1], nil, 'c')
}

func filterDefault(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("default", args, kw, "default_value", "boolean")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined && a[0].s == "" && len(args) == 0 {
		a[0] = String("")
	}
	if v.k == kUndefined || (a[1].truth() && !v.truth()) {
		return a[0], nil
	}
	return v, nil
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", "\"", "&#34;").Replace(s)
}

func filterEscape(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	return escapeValue(v), nil
}

// escapeValue is markupsafe.escape: Markup stays as is, anything else is
// str()-ed, HTML-escaped and marked safe.
func escapeValue(v Value) Value {
	if v.isMarkup() {
		return v
	}
	return markup(htmlEscape(v.str()))
}

func filterForceEscape(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	return markup(htmlEscape(v.str())), nil
}

// filterTruncate is Jinja2's truncate with the default leeway of 5.
func filterTruncate(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("truncate", args, kw, "length", "killwords", "end", "leeway")
	if err != nil {
		return Value{}, err
	}
	length, leeway, end := 255, 5, "..."
	if a[0].k != kUndefined {
		if !a[0].isInt() {
			return Value{}, errf(KindType, "'<=' not supported between instances of 'int' and '%s'", a[0].typeName())
		}
		length = clampInt(a[0].n)
	}
	if a[2].k != kUndefined {
		end = a[2].str()
	}
	if a[3].k != kUndefined && a[3].k != kNone {
		if !a[3].isInt() {
			return Value{}, errf(KindType, "'>=' not supported between instances of '%s' and 'int'", a[3].typeName())
		}
		leeway = clampInt(a[3].n)
	}
	if length < runeLen(end) || leeway < 0 {
		return Value{}, errf(KindAssertion, "expected length >= %d, got %d", runeLen(end), length)
	}
	s := []rune(v.str())
	if len(s) <= length+leeway {
		return String(string(s)), nil
	}
	cut := string(s[:length-runeLen(end)])
	if a[1].truth() {
		return String(cut + end), nil
	}
	if i := strings.LastIndex(cut, " "); i >= 0 {
		cut = cut[:i]
	}
	return String(cut + end), nil
}

func filterSafe(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if v.isMarkup() {
		return v, nil
	}
	return markup(v.str()), nil
}

func filterFormat(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if len(args) > 0 && len(kw) > 0 {
		return Value{}, errf(KindFilterArgument, "can't handle positional and keyword arguments at the same time")
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	var arg Value
	if len(kw) > 0 {
		m := NewMap()
		for _, k := range kw {
			m.Set(k.name, k.v)
		}
		arg = MapValue(m)
	} else {
		arg = tuple(args...)
	}
	r, err := pyFormat(s, arg)
	return String(r), err
}

func filterIndent(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("indent", args, kw, "width", "first", "blank")
	if err != nil {
		return Value{}, err
	}
	ind := "    "
	switch w := a[0]; w.k {
	case kString:
		ind = w.s
	case kInt, kBool:
		if w.n > maxRepeat {
			return Value{}, errf(KindOverflow, "indent too large")
		}
		ind = strings.Repeat(" ", max(0, clampInt(w.n)))
	case kUndefined:
	default:
		return Value{}, errf(KindType, "can't multiply sequence by non-int of type '%s'", w.typeName())
	}
	// do_indent does `s += "\n"` then s.splitlines() without str().
	switch v.k {
	case kString:
	case kUndefined:
		return Value{}, undefinedError(v)
	case kList:
		return Value{}, errf(KindAttribute, "'list' object has no attribute 'splitlines'")
	case kTuple:
		return Value{}, errf(KindType, "can only concatenate tuple (not \"str\") to tuple")
	default:
		return Value{}, errf(KindType, "unsupported operand type(s) for +=: '%s' and 'str'", v.typeName())
	}
	s := v.s + "\n"
	lines := splitLines(s, false)
	var b strings.Builder
	if a[2].truth() {
		for i, l := range lines {
			if i > 0 {
				b.WriteString("\n" + ind)
			}
			b.WriteString(l.s)
		}
	} else {
		b.WriteString(lines[0].s)
		for _, l := range lines[1:] {
			b.WriteString("\n")
			if l.s != "" {
				b.WriteString(ind)
			}
			b.WriteString(l.s)
		}
	}
	rv := b.String()
	if a[1].truth() {
		rv = ind + rv
	}
	return String(rv), nil
}

func filterReplace(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("replace", args, kw, "old", "new", "count")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined || a[1].k == kUndefined && len(args)+len(kw) < 2 {
		return Value{}, errf(KindType, "do_replace() missing required argument")
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	n := -1
	if a[2].k != kUndefined && a[2].k != kNone {
		if !a[2].isInt() {
			return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", a[2].typeName())
		}
		n = clampInt(a[2].n)
	}
	return String(pyReplace(s, a[0].str(), a[1].str(), n)), nil
}

func filterString(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	if v.isMarkup() {
		return v, nil // soft_str keeps Markup
	}
	s, err := softStr(v)
	return String(s), err
}

var tagRE = regexp.MustCompile(`(?s)<!--.*?-->|<[^>]*>`)

func filterStriptags(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	s = tagRE.ReplaceAllString(s, "")
	s = strings.Join(strings.FieldsFunc(s, isPySpace), " ")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&#39;", "'", "&#34;", "\"", "&quot;", "\"").Replace(s)
	return String(s), nil
}

// filterToJSON is transformers' override: json.dumps(x,
// ensure_ascii=False, indent=None, separators=None, sort_keys=False).
func filterToJSON(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("tojson", args, kw, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return Value{}, err
	}
	o := &jsonOptions{itemSep: ", ", keySep: ": ", ensureASCI: a[0].k != kUndefined && a[0].truth(), sortKeys: a[3].truth()}
	switch ind := a[1]; ind.k {
	case kUndefined, kNone:
	case kString:
		o.indent, o.hasIndent = ind.s, true
	case kInt, kBool:
		if ind.n > maxRepeat {
			return Value{}, errf(KindOverflow, "indent too large")
		}
		o.indent, o.hasIndent = strings.Repeat(" ", max(0, clampInt(ind.n))), true
	default:
		return Value{}, errf(KindType, "can't multiply sequence by non-int of type '%s'", ind.typeName())
	}
	if o.hasIndent {
		o.itemSep = ","
	}
	switch sep := a[2]; sep.k {
	case kUndefined, kNone:
	case kList, kTuple:
		items := sep.list()
		if len(items) != 2 {
			return Value{}, errf(KindValue, "too many values to unpack (expected 2)")
		}
		if items[0].k != kString || items[1].k != kString {
			return Value{}, errf(KindType, "separators must be strings")
		}
		o.itemSep, o.keySep = items[0].s, items[1].s
	default:
		return Value{}, errf(KindType, "separators must be a pair of strings")
	}
	s, err := dumpJSON(v, o)
	return String(s), err
}

func filterTrim(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("trim", args, kw, "chars")
	if err != nil {
		return Value{}, err
	}
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	chars, has := "", false
	if a[0].k != kUndefined && a[0].k != kNone {
		if chars, err = needStr("strip", a[0]); err != nil {
			return Value{}, err
		}
		has = true
	}
	return String(pyStrip(s, chars, has, true, true)), nil
}

var wordRE = regexp.MustCompile(`[\p{L}\p{N}_\p{Mn}]+`)

func filterWordcount(ev *evaluator, v Value, args []Value, kw []kwArg) (Value, error) {
	s, err := softStr(v)
	if err != nil {
		return Value{}, err
	}
	return Int(int64(len(wordRE.FindAllStringIndex(s, -1)))), nil
}

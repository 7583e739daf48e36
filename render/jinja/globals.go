package jinja

import (
	"strconv"
	"strings"
	"time"
)

// maxRange is the sandbox's MAX_RANGE.
const maxRange = 100000

func builtin(name string, f func(ev *evaluator, args []Value, kw []kwArg) (Value, error)) Value {
	return Value{k: kFunc, o: &funcObj{name: name, call: f}}
}

// globals are immutable after package initialization.
var globals = map[string]Value{
	"range":           builtin("range", globalRange),
	"dict":            builtin("dict", globalDict),
	"namespace":       builtin("namespace", globalNamespace),
	"raise_exception": builtin("raise_exception", globalRaise),
	"strftime_now":    builtin("strftime_now", globalStrftime),
	"joiner":          builtin("joiner", globalJoiner),
}

func lookupGlobal(name string) (Value, bool) {
	v, ok := globals[name]
	return v, ok
}

func globalRange(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
	if err := needArgs("range", args, kw, 1, 3); err != nil {
		return Value{}, err
	}
	var n [3]int64
	for i, a := range args {
		if !a.isInt() {
			if a.k == kUndefined {
				return Value{}, undefinedError(a)
			}
			return Value{}, errf(KindType, "'%s' object cannot be interpreted as an integer", a.typeName())
		}
		if a.k == kBig {
			return Value{}, errf(KindOverflow, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
		}
		n[i] = a.n
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(args) >= 2 {
		start, stop = n[0], n[1]
	}
	if len(args) == 3 {
		step = n[2]
		if step == 0 {
			return Value{}, errf(KindValue, "range() arg 3 must not be zero")
		}
	}
	var count int64
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		count = (start - stop - step - 1) / -step
	}
	if count > maxRange {
		return Value{}, errf(KindOverflow, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	out := make([]Value, count)
	for i := range out {
		out[i] = Int(start + int64(i)*step)
	}
	return Value{k: kList, o: &listObj{items: out, rng: &[3]int64{start, stop, step}}}, nil
}

// dictFromArgs is dict(*args, **kwargs).
func dictFromArgs(ev *evaluator, fname string, args []Value, kw []kwArg) (*Map, error) {
	if len(args) > 1 {
		return nil, errf(KindType, "%s expected at most 1 argument, got %d", fname, len(args))
	}
	// Room for the usual entries (namespace(a=…, b=…), dict(other)): one allocation for them.
	size := len(kw)
	if len(args) == 1 && (args[0].k == kMap || args[0].k == kNamespace) {
		size += args[0].mapv().Len()
	}
	m := NewMap()
	if size > 0 {
		m = NewMapSize(size)
	}
	if len(args) == 1 {
		switch a := args[0]; a.k {
		case kMap, kNamespace:
			src := a.mapv()
			for i, k := range src.keys {
				m.set(k, src.vals[i])
			}
		default:
			items, err := ev.iterate(a)
			if err != nil {
				return nil, err
			}
			for i, it := range items {
				pair, err := ev.iterate(it)
				if err != nil {
					return nil, errf(KindType, "cannot convert dictionary update sequence element #%d to a sequence", i)
				}
				if len(pair) != 2 {
					return nil, errf(KindValue, "dictionary update sequence element #%d has length %d; 2 is required", i, len(pair))
				}
				if !hashable(pair[0]) {
					return nil, errf(KindType, "unhashable type: '%s'", pair[0].typeName())
				}
				m.set(pair[0], pair[1])
			}
		}
	}
	for _, k := range kw {
		m.Set(k.name, k.v)
	}
	return m, nil
}

func globalDict(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
	m, err := dictFromArgs(ev, "dict", args, kw)
	if err != nil {
		return Value{}, err
	}
	return MapValue(m), nil
}

func globalNamespace(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
	m, err := dictFromArgs(ev, "dict", args, kw)
	if err != nil {
		return Value{}, err
	}
	return Value{k: kNamespace, o: m}, nil
}

func globalRaise(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("raise_exception", args, kw, "message")
	if err != nil {
		return Value{}, err
	}
	if a[0].k == kUndefined && len(args)+len(kw) == 0 {
		return Value{}, errf(KindType, "raise_exception() missing 1 required positional argument: 'message'")
	}
	return Value{}, errf(KindTemplate, "%s", a[0].str())
}

func globalJoiner(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("joiner", args, kw, "sep")
	if err != nil {
		return Value{}, err
	}
	sep := ", "
	if a[0].k != kUndefined {
		sep = a[0].str()
	}
	used := false
	return builtin("joiner", func(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
		if !used {
			used = true
			return String(""), nil
		}
		return String(sep), nil
	}), nil
}

func globalStrftime(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
	a, err := argSpec("strftime_now", args, kw, "format")
	if err != nil {
		return Value{}, err
	}
	f, err := needStr("strftime", a[0])
	if err != nil {
		return Value{}, err
	}
	return String(strftime(ev.now(), f)), nil
}

var weekdays = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// strftime formats t like Python's datetime.strftime on glibc for a naive
// datetime (%z and %Z are empty). Unknown directives are kept.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	pad := func(n, w int, noPad bool, fill byte) {
		s := strconv.Itoa(n)
		if !noPad {
			for len(s) < w {
				s = string(fill) + s
			}
		}
		b.WriteString(s)
	}
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' || i+1 >= len(f) {
			b.WriteByte(c)
			continue
		}
		i++
		noPad := false
		if f[i] == '-' && i+1 < len(f) {
			noPad = true
			i++
		}
		hour12 := t.Hour() % 12
		if hour12 == 0 {
			hour12 = 12
		}
		switch f[i] {
		case 'Y':
			pad(t.Year(), 1, noPad, '0')
		case 'y':
			pad(t.Year()%100, 2, noPad, '0')
		case 'm':
			pad(int(t.Month()), 2, noPad, '0')
		case 'd':
			pad(t.Day(), 2, noPad, '0')
		case 'e':
			pad(t.Day(), 2, noPad, ' ')
		case 'H':
			pad(t.Hour(), 2, noPad, '0')
		case 'I':
			pad(hour12, 2, noPad, '0')
		case 'M':
			pad(t.Minute(), 2, noPad, '0')
		case 'S':
			pad(t.Second(), 2, noPad, '0')
		case 'f':
			pad(t.Nanosecond()/1000, 6, false, '0')
		case 'j':
			pad(t.YearDay(), 3, noPad, '0')
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(weekdays[t.Weekday()][:3])
		case 'A':
			b.WriteString(weekdays[t.Weekday()])
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			b.WriteString(strconv.Itoa(wd))
		case 'F':
			b.WriteString(strftime(t, "%Y-%m-%d"))
		case 'T':
			b.WriteString(strftime(t, "%H:%M:%S"))
		case 'D':
			b.WriteString(strftime(t, "%m/%d/%y"))
		case 'R':
			b.WriteString(strftime(t, "%H:%M"))
		case 'c':
			b.WriteString(strftime(t, "%a %b %e %H:%M:%S %Y"))
		case 'x':
			b.WriteString(strftime(t, "%m/%d/%y"))
		case 'X':
			b.WriteString(strftime(t, "%H:%M:%S"))
		case 'z', 'Z':
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if noPad {
				b.WriteByte('-')
			}
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

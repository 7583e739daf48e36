package jinja

// testFunc implements one test (`x is name(args)`).
type testFunc func(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error)

func cmpTest(op string) testFunc {
	return func(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
		if err := needArgs(op, args, kw, 1, 1); err != nil {
			return false, err
		}
		return compareOp(op, v, args[0])
	}
}

func kindTest(f func(Value) bool) testFunc {
	return func(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
		if len(args) > 0 || len(kw) > 0 {
			return false, errf(KindType, "test takes 1 positional argument but %d were given", len(args)+1)
		}
		return f(v), nil
	}
}

// lookupTest returns the builtin test name, or nil.
func lookupTest(name string) testFunc {
	switch name {
	case "filter":
		return testFilter
	case "test":
		return testTest
	}
	return builtinTests[name]
}

var builtinTests = buildTests()

func testFilter(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
	return v.k == kString && lookupFilter(v.s) != nil, nil
}

func testTest(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
	return v.k == kString && lookupTest(v.s) != nil, nil
}

func buildTests() map[string]testFunc {
	eq, ne := cmpTest("=="), cmpTest("!=")
	lt, le, gt, ge := cmpTest("<"), cmpTest("<="), cmpTest(">"), cmpTest(">=")
	parity := func(want int64) testFunc {
		return func(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
			r, err := binaryOp("%", v, Int(2))
			if err != nil {
				return false, err
			}
			return valuesEqual(r, Int(want)), nil
		}
	}
	return map[string]testFunc{
		"boolean": kindTest(func(v Value) bool { return v.k == kBool }),
		"callable": kindTest(func(v Value) bool {
			return v.k == kFunc || v.k == kUndefined || v.k == kLoop && v.o.(*loopObj).recurse != nil
		}),
		"defined":   kindTest(func(v Value) bool { return v.k != kUndefined }),
		"undefined": kindTest(func(v Value) bool { return v.k == kUndefined }),
		"divisibleby": func(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
			if err := needArgs("divisibleby", args, kw, 1, 1); err != nil {
				return false, err
			}
			r, err := binaryOp("%", v, args[0])
			if err != nil {
				return false, err
			}
			return valuesEqual(r, Int(0)), nil
		},
		"eq": eq, "equalto": eq, "==": eq,
		"ne": ne, "!=": ne,
		"lt": lt, "lessthan": lt, "<": lt,
		"le": le, "<=": le,
		"gt": gt, "greaterthan": gt, ">": gt,
		"ge": ge, ">=": ge,
		"escaped": kindTest(func(v Value) bool { return false }),
		"even":    parity(0),
		"odd":     parity(1),
		"false":   kindTest(func(v Value) bool { return v.k == kBool && v.n == 0 }),
		"true":    kindTest(func(v Value) bool { return v.k == kBool && v.n == 1 }),
		"float":   kindTest(func(v Value) bool { return v.k == kFloat }),
		"integer": kindTest(func(v Value) bool { return v.k == kInt || v.k == kBig }),
		"number":  kindTest(func(v Value) bool { return v.isNumber() }),
		"in": func(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
			if err := needArgs("in", args, kw, 1, 1); err != nil {
				return false, err
			}
			return contains(args[0], v)
		},
		"iterable": kindTest(func(v Value) bool {
			switch v.k {
			case kString, kList, kTuple, kMap, kUndefined:
				return true
			}
			return false
		}),
		"sequence": kindTest(func(v Value) bool {
			switch v.k {
			case kString, kList, kTuple, kMap, kUndefined:
				return true
			}
			return false
		}),
		"mapping": kindTest(func(v Value) bool { return v.k == kMap }),
		"none":    kindTest(func(v Value) bool { return v.k == kNone }),
		"string":  kindTest(func(v Value) bool { return v.k == kString }),
		"lower": kindTest(func(v Value) bool {
			s := v.str()
			return hasCased(s) && pyUpper(s) != s && pyLower(s) == s
		}),
		"upper": kindTest(func(v Value) bool {
			s := v.str()
			return hasCased(s) && pyLower(s) != s && pyUpper(s) == s
		}),
		"sameas": func(ev *evaluator, v Value, args []Value, kw []kwArg) (bool, error) {
			if err := needArgs("sameas", args, kw, 1, 1); err != nil {
				return false, err
			}
			o := args[0]
			if v.k != o.k {
				return false, nil
			}
			switch v.k {
			case kNone:
				return true, nil
			case kBool:
				return v.n == o.n, nil
			case kInt:
				return v.n == o.n && v.n >= -5 && v.n <= 256, nil
			case kString:
				return v.s == o.s, nil
			case kList, kTuple, kMap, kNamespace, kFunc, kLoop:
				return v.o == o.o, nil
			}
			return false, nil
		},
	}
}

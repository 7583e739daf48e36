package jinja

func (ev *evaluator) evalArgs(c *callArgs, f *frame) ([]Value, []kwArg, error) {
	var args []Value
	if len(c.args) > 0 {
		args = make([]Value, 0, len(c.args))
	}
	for _, a := range c.args {
		v, err := ev.eval(a, f)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	if c.dynArgs != nil {
		v, err := ev.eval(c.dynArgs, f)
		if err != nil {
			return nil, nil, err
		}
		items, err := ev.iterate(v)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, items...)
	}
	var kw []kwArg
	for i, name := range c.kwNames {
		v, err := ev.eval(c.kwVals[i], f)
		if err != nil {
			return nil, nil, err
		}
		kw = append(kw, kwArg{name, v})
	}
	if c.dynKw != nil {
		v, err := ev.eval(c.dynKw, f)
		if err != nil {
			return nil, nil, err
		}
		if v.k != kMap {
			return nil, nil, errf(KindType, "argument after ** must be a mapping, not %s", v.typeName())
		}
		m := v.mapv()
		for i, k := range m.keys {
			if k.k != kString {
				return nil, nil, errf(KindType, "keywords must be strings")
			}
			kw = append(kw, kwArg{k.s, m.vals[i]})
		}
	}
	return args, kw, nil
}

func (ev *evaluator) evalCall(c *callExpr, f *frame, caller *Value) (Value, error) {
	var fn Value
	if a, ok := c.fn.(*attrExpr); ok {
		obj, err := ev.eval(a.x, f)
		if err != nil {
			return Value{}, err
		}
		if caller == nil && obj.k != kUndefined && obj.k != kNamespace && !isDunder(a.name) {
			if m, ok := methodFunc(obj, a.name); ok {
				args, kw, err := ev.evalArgs(&c.callArgs, f)
				if err != nil {
					return Value{}, err
				}
				return m(ev, obj, args, kw)
			}
		}
		if ev.pure {
			return Value{}, errNotPure()
		}
		if fn, err = getAttr(obj, a.name); err != nil {
			return Value{}, err
		}
	} else {
		if ev.pure {
			return Value{}, errNotPure()
		}
		var err error
		if fn, err = ev.eval(c.fn, f); err != nil {
			return Value{}, err
		}
	}
	args, kw, err := ev.evalArgs(&c.callArgs, f)
	if err != nil {
		return Value{}, err
	}
	if caller != nil {
		kw = append(kw, kwArg{"caller", *caller})
	}
	return ev.callValue(fn, args, kw)
}

func (ev *evaluator) callValue(fn Value, args []Value, kw []kwArg) (Value, error) {
	switch fn.k {
	case kFunc:
		return fn.o.(*funcObj).call(ev, args, kw)
	case kUndefined:
		return Value{}, undefinedError(fn)
	case kLoop:
		l := fn.o.(*loopObj)
		if l.recurse == nil {
			return Value{}, errf(KindType, "Tried to call non recursive loop.  Maybe you forgot the 'recursive' modifier.")
		}
		if len(args) != 1 || len(kw) != 0 {
			return Value{}, errf(KindType, "loop() takes exactly one argument")
		}
		return l.recurse(args[0])
	}
	return Value{}, errf(KindType, "'%s' object is not callable", fn.typeName())
}

// macroValue closes m over the frame where it is defined.
func (ev *evaluator) macroValue(m *macroDef, def *frame) Value {
	return Value{k: kFunc, o: &funcObj{name: m.name, macro: true, def: m, topLevel: def == ev.top, call: func(ev *evaluator, args []Value, kw []kwArg) (Value, error) {
		return ev.callMacro(m, def, args, kw)
	}}}
}

func (ev *evaluator) callMacro(m *macroDef, def *frame, args []Value, kw []kwArg) (Value, error) {
	ev.depth++
	defer func() { ev.depth-- }()
	if ev.depth > maxCallDepth {
		return Value{}, errf(KindRecursion, "maximum recursion depth exceeded")
	}
	inner := &frame{parent: def}
	np := len(m.params)
	if len(args) > np && !m.catchVarargs {
		return Value{}, errf(KindType, "macro '%s' takes not more than %d argument(s)", m.name, np)
	}
	firstDefault := np - len(m.defaults)
	used := make([]bool, len(kw))
	for i, p := range m.params {
		if i < len(args) {
			for j, k := range kw {
				if k.name == p {
					return Value{}, errf(KindType, "macro '%s' got multiple values for argument '%s'", m.name, p)
				}
				_ = j
			}
			inner.set(p, args[i])
			continue
		}
		found := false
		for j, k := range kw {
			if k.name == p && !used[j] {
				inner.set(p, k.v)
				used[j] = true
				found = true
				break
			}
		}
		if found {
			continue
		}
		if i >= firstDefault {
			v, err := ev.eval(m.defaults[i-firstDefault], inner)
			if err != nil {
				return Value{}, err
			}
			inner.set(p, v)
		} else {
			inner.set(p, undefined("parameter '"+p+"' was not provided"))
		}
	}
	if m.callerUsed {
		caller := undefined("No caller defined")
		for j, k := range kw {
			if k.name == "caller" && !used[j] {
				caller = k.v
				used[j] = true
			}
		}
		inner.set("caller", caller)
	}
	if m.catchVarargs {
		var extra []Value
		if len(args) > np {
			extra = args[np:]
		}
		inner.set("varargs", tuple(extra...))
	}
	rest := NewMap()
	for j, k := range kw {
		if !used[j] {
			rest.Set(k.name, k.v)
		}
	}
	if m.catchKwargs {
		inner.set("kwargs", MapValue(rest))
	} else if rest.Len() > 0 {
		k := rest.keys[0].s
		if k == "caller" {
			return Value{}, errf(KindType, "macro '%s' was invoked with two values for the special caller argument. This is most likely a bug.", m.name)
		}
		return Value{}, errf(KindType, "macro '%s' takes no keyword argument '%s'", m.name, k)
	}
	s, _, err := ev.capture(m.body, inner)
	if err != nil {
		return Value{}, err
	}
	return String(s), nil
}

func (ev *evaluator) applyFilter(flt *filterExpr, v Value, f *frame) (Value, error) {
	if flt.fn == nil {
		return Value{}, atLine(errf(KindRuntime, "No filter named '%s' found.", flt.name), flt.span)
	}
	args, kw, err := ev.evalArgs(&flt.call, f)
	if err != nil {
		return Value{}, err
	}
	r, err := flt.fn(ev, v, args, kw)
	if err != nil {
		return Value{}, atLine(err, flt.span)
	}
	return r, nil
}

func (ev *evaluator) applyTest(t *testExpr, f *frame) (Value, error) {
	v, err := ev.eval(t.x, f)
	if err != nil {
		return Value{}, err
	}
	if t.fn == nil {
		return Value{}, errf(KindRuntime, "No test named '%s' found.", t.name)
	}
	args, kw, err := ev.evalArgs(&t.call, f)
	if err != nil {
		return Value{}, err
	}
	ok, err := t.fn(ev, v, args, kw)
	if err != nil {
		return Value{}, err
	}
	return Bool(ok), nil
}

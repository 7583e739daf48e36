package jinja

// This file answers the one question vLLM asks of a chat template's syntax tree before
// rendering: does the template loop over a message's content? vLLM (vllm/renderers/hf.py,
// _detect_content_format) then hands content to the template as a list of {type, text} parts
// (the "openai" content format), otherwise as one string. The walk below follows vLLM's rules on
// this package's tree, including where vLLM gives up (a loop or assignment target that is not a
// plain name): vLLM then falls back to the string format.

// LoopsOverMessageContent reports whether the template has a {% for %} whose iterable is
// message.content or message['content'] (possibly filtered, tested or sliced), where message is
// the target of a {% for %} over messages, or over a variable assigned from messages
// ({% set loop_messages = messages[1:] %}, transitively). It is false where vLLM's walk stops
// with an error, as vLLM then uses the string format.
func (t *Template) LoopsOverMessageContent() bool {
	var sets []*setNode
	var loops []*forNode
	walkStatements(t.body, func(n node) {
		switch n := n.(type) {
		case *setNode:
			sets = append(sets, n)
		case *forNode:
			loops = append(loops, n)
		}
	})

	// Names bound to messages or to a part of it: vLLM's breadth-first search over assignments.
	msgVars := []string{"messages"}
	seen := map[string]bool{"messages": true}
	for queue := []string{"messages"}; len(queue) > 0; queue = queue[1:] {
		for _, s := range sets {
			if !accessOf(s.value, queue[0], "") {
				continue
			}
			name, ok := s.target.(*nameExpr)
			if !ok {
				return false // vLLM asserts a plain name here and falls back to "string"
			}
			msgVars = append(msgVars, name.name)
			if !seen[name.name] {
				seen[name.name] = true
				queue = append(queue, name.name)
			}
		}
	}

	// Loop variables over messages: every loop is checked before content loops are looked for.
	var itemVars []string
	for _, l := range loops {
		for _, v := range msgVars {
			if accessOf(l.iter, v, "") {
				name, ok := l.target.(*nameExpr)
				if !ok {
					return false
				}
				itemVars = append(itemVars, name.name)
				break
			}
		}
	}

	// The first loop over one of those variables' content decides.
	for _, l := range loops {
		for _, v := range itemVars {
			if accessOf(l.iter, v, "content") {
				_, ok := l.target.(*nameExpr)
				return ok
			}
		}
	}
	return false
}

// accessOf reports whether e reads variable name (key == "") or its key attribute or item
// (name.key, name['key']), seen through filters, tests and slices as vLLM's
// _is_var_or_elems_access does.
func accessOf(e expr, name, key string) bool {
	switch e := e.(type) {
	case *filterExpr:
		return e.x != nil && accessOf(e.x, name, key)
	case *testExpr:
		return accessOf(e.x, name, key)
	case *itemExpr:
		if _, ok := e.key.(*sliceExpr); ok {
			return accessOf(e.x, name, key)
		}
		if key == "" {
			return false
		}
		c, ok := e.key.(*constExpr)
		return ok && c.v.k == kString && c.v.s == key && isName(e.x, name)
	case *attrExpr:
		return key != "" && e.name == key && isName(e.x, name)
	}
	return key == "" && isName(e, name)
}

func isName(e expr, name string) bool {
	n, ok := e.(*nameExpr)
	return ok && n.name == name
}

// walkStatements calls visit for every statement of body and of the bodies nested in it, each
// before its children, in source order (the order of Jinja2's Node.find_all).
func walkStatements(body []node, visit func(node)) {
	for _, n := range body {
		visit(n)
		switch n := n.(type) {
		case *ifNode:
			for _, b := range n.bodies {
				walkStatements(b, visit)
			}
			walkStatements(n.els, visit)
		case *forNode:
			walkStatements(n.body, visit)
			walkStatements(n.els, visit)
		case *setBlockNode:
			walkStatements(n.body, visit)
		case *macroNode:
			walkStatements(n.m.body, visit)
		case *callBlockNode:
			walkStatements(n.caller.body, visit)
		case *filterBlockNode:
			walkStatements(n.body, visit)
		case *withNode:
			walkStatements(n.body, visit)
		case *generationNode:
			walkStatements(n.body, visit)
		}
	}
}

package e2e

import "testing"

// TestNodeAPISurface runs e2e/node/api_surface.mjs: the issue-18 surface with the Node SDK.
func TestNodeAPISurface(t *testing.T) {
	st := requireStack(t)
	node := requireNode(t)
	runNodeScript(t, st, node, "api_surface.mjs")
}

// Package continuation names the continuation modes (docs/design.md, "Two continuation modes"): a
// leaf both the configuration (configs) and the artifact store (store) use, so that configs
// needs nothing of store.
package continuation

import "fmt"

// Mode is how a continuation's prompt is built, and the mode an artifact was built for.
type Mode uint8

const (
	// Canonical: the prompt is exactly a full render of the conversation; the artifact only
	// saves tokenization work (certified suffix).
	Canonical Mode = 0
	// Exact: the history is frozen as prompt ids plus generated ids.
	Exact Mode = 1
)

// Parse reads a mode by the name String gives it ("canonical" or "exact"): the one parse of a
// configured mode.
func Parse(s string) (Mode, error) {
	switch s {
	case "canonical":
		return Canonical, nil
	case "exact":
		return Exact, nil
	}
	return 0, fmt.Errorf("%q is not canonical or exact", s)
}

// String returns "canonical" or "exact".
func (m Mode) String() string {
	switch m {
	case Canonical:
		return "canonical"
	case Exact:
		return "exact"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

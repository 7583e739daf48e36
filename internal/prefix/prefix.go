// Package prefix measures how much two texts share, at memory speed.
package prefix

// Len returns the length of the longest common prefix of a and b. Blocks are compared with ==,
// which runs at memory speed, before the differing block is searched bytewise.
func Len(a, b string) int {
	n := min(len(a), len(b))
	const block = 4096
	i := 0
	for i+block <= n && a[i:i+block] == b[i:i+block] {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

//go:build race

package jinja

// claimAlign: under the race detector an output claims an arena's end only at an 8-byte offset.
// Claims never write a byte another output reads (readers stay below textArena.used, the claimer
// writes at and after it), but the detector checks copy()'s ranges in 8-byte cells and reports
// a claimer writing the same cell as a reader copying the bytes just before it.
const claimAlign = 8

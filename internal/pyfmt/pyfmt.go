// Package pyfmt writes and reads numbers and whitespace as CPython does, for the two places
// stitch must match Python text exactly: chat templates (Jinja2 runs in Python: repr, float(),
// the lexer's whitespace) and the tool parsers that rebuild arguments with json.dumps
// (vLLM's qwen3_coder, GLM and pythonic parsers).
package pyfmt

import (
	"math"
	"strconv"
	"strings"
)

// FloatRepr is Python's repr(float): the shortest digits that round-trip, fixed notation for
// decimal exponents in [-4, 16) with ".0" for integral values, otherwise d.ddde±XX with at least
// two exponent digits; "inf", "-inf" and "nan" for the rest (json.dumps writes those as
// Infinity, -Infinity and NaN: the caller chooses).
func FloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d.ddde±XX
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	digits := strings.Replace(mant, ".", "", 1)
	switch {
	case exp < -4 || exp >= 16:
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		ex := strconv.Itoa(exp)
		if len(ex) < 2 {
			ex = "0" + ex
		}
		return sign + m + "e" + es + ex
	case exp < 0:
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	case len(digits) <= exp+1:
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

// DumpsFloat is json.dumps(f): FloatRepr, with Infinity, -Infinity and NaN for the rest.
func DumpsFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return FloatRepr(f)
}

// ParseFloat is Python's float(str): surrounding whitespace (IsSpace), one optional sign,
// inf/infinity/nan in any case, underscores only between decimal digits, no hexadecimal
// (strconv reads "0x1p-2"; Python does not). Out-of-range values give ±inf or 0, as Python's do.
func ParseFloat(s string) (float64, bool) {
	t := strings.TrimFunc(s, IsSpace)
	body := strings.TrimLeft(t, "+-")
	if len(t)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if body == "" || strings.ContainsAny(body, "xXpP") {
		return 0, false
	}
	clean := t
	if strings.Contains(t, "_") {
		b := make([]byte, 0, len(t))
		for i := 0; i < len(t); i++ {
			if t[i] == '_' {
				if i == 0 || i == len(t)-1 || !isDigit(t[i-1]) || !isDigit(t[i+1]) {
					return 0, false
				}
				continue
			}
			b = append(b, t[i])
		}
		clean = string(b)
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// IsSpace is Python's str.isspace for one character (the whitespace str.strip, float() and
// Jinja2's lexer skip): ASCII whitespace, the separators U+001C–U+001F, and Unicode's.
func IsSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

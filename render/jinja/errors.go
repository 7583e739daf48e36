package jinja

// Sentinel errors, matched with errors.Is against any *Error of the same
// kind.
var (
	// ErrSyntax: the template source is invalid; fix the template.
	ErrSyntax error = &Error{Kind: KindSyntax}
	// ErrRaised: the template called raise_exception; the inputs violate
	// the template's expectations (report the message to the client).
	ErrRaised error = &Error{Kind: KindTemplate}
	// ErrFuel: rendering exceeded Options.Fuel; the template loops too
	// long for its inputs.
	ErrFuel error = &Error{Kind: KindFuel}
)

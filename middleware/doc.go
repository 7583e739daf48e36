// Package middleware holds the HTTP middleware in front of stitch's handlers: request ids, panic
// recovery, tenant authentication and request metrics. Each is a func(http.Handler) http.Handler.
//
// The tenant is taken from the API key (Authorization: Bearer), never from the body; handlers read it
// with [Tenant].
package middleware

// Package webtest runs web/test (node --test) against the local stack.
package webtest

// Package webtest runs web/test against the local stack.
package webtest

// Package shellwords prints argument lists as shell command lines, for tools that show a command a
// person can paste (the load harness's report, the deployment checks' failures).
package shellwords

import "strings"

// Join joins args as a shell command line, single-quoting each argument the shell would split or
// expand, and the empty one.
func Join(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n;'\"$&|<>*?()[]{}`\\!#~") {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

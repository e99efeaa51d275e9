// Package shellwords quotes commands.
package shellwords

import "strings"

// Join joins args, quoting empty ones and any a shell alters.
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

package rules

import (
	"fmt"
	"regexp"
	"strings"
)

// rollupsMatch is a block's roll-ups match, up to its closing brace.
var rollupsMatch = regexp.MustCompile(`(?s)(\n[ \t]*)match /rollups/\{counterId\} \{.*?\n[ \t]*\}`)

// CloseReads returns block with clients denied the roll-ups of the counter IDs that unreadable (RE2
// expressions of whole IDs, as sources.Set.UnreadableIDs gives them) match, in gets and queries
// alike; block unchanged when unreadable is empty or it opens no roll-ups.
func CloseReads(block []byte, unreadable []string) []byte {
	loc := rollupsMatch.FindSubmatchIndex(block)
	if len(unreadable) == 0 || loc == nil {
		return block
	}
	conds := make([]string, len(unreadable))
	for i, expr := range unreadable {
		conds[i] = fmt.Sprintf("counterId.matches('%s')", strings.ReplaceAll(expr, `\`, `\\`))
	}
	indent := string(block[loc[2]:loc[3]])
	fn := fmt.Sprintf("%[1]s// The roll-ups of counters declared \"read\": \"none\" (counter-sources.json): no client reads them."+
		"%[1]sfunction isUnreadable(counterId) {%[1]s  return %[2]s;%[1]s}\n", indent, strings.Join(conds, indent+"      || "))
	match := string(block[loc[0]:loc[1]])
	match = strings.Replace(match, "allow get: if true;", "allow get: if !isUnreadable(counterId);", 1)
	match = strings.Replace(match, "allow list: if isBoundedQuery();", "allow list: if isBoundedQuery() && !isUnreadable(counterId);", 1)
	return []byte(string(block[:loc[0]]) + fn + match + string(block[loc[1]:]))
}

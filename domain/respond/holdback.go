package respond

import "strings"

// partialSuffix is the length of the longest suffix of s that is a proper prefix of tag: text a
// parser must hold back because the next chunk may complete the tag.
func partialSuffix(s, tag string) int {
	for n := min(len(tag)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, tag[:n]) {
			return n
		}
	}
	return 0
}

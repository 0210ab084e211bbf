package jsonbody

// Member returns the raw bytes of key's value in obj without building an index: the last
// occurrence, like Object.Get. obj must be part of a document Parse or Valid accepted (for
// example a value returned by Get); ok is false when obj is not an object or has no member
// key. It allocates nothing unless a key holds escapes or non-ASCII bytes (then it is
// decoded to compare, as Get does). On bytes that were never validated it does not panic but
// its answer is meaningless.
func Member(obj []byte, key string) (raw []byte, ok bool) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i = skipWS(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kEnd := skipTrusted(obj, i)
		if kEnd < i+2 {
			return nil, false
		}
		j := skipWS(obj, kEnd)
		if j >= len(obj) || obj[j] != ':' {
			return nil, false
		}
		vs := skipWS(obj, j+1)
		ve := skipTrusted(obj, vs)
		if keyEquals(obj[i+1:kEnd-1], key) {
			raw, ok = obj[vs:ve:ve], true
		}
		i = skipWS(obj, ve)
		if i >= len(obj) || obj[i] != ',' {
			break
		}
		i = skipWS(obj, i+1)
	}
	return raw, ok
}

// keyEquals reports whether the quoted key text k (without its quotes) decodes to key.
func keyEquals(k []byte, key string) bool {
	for _, c := range k {
		if c == '\\' || c >= 0x80 {
			return unquoteBytes(k) == key
		}
	}
	return string(k) == key
}

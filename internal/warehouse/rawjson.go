package warehouse

// topLevelField returns the bytes of the value of key in the JSON object raw, or nil; the last
// one if the key repeats (as encoding/json decodes it). raw must be valid JSON (the decoder has
// already accepted it); the scan tracks strings and nesting only, so it costs a fraction of
// re-encoding the decoded payload.
func topLevelField(raw []byte, key string) []byte {
	var found []byte
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] == '}' {
			return found
		}
		if raw[i] == ',' {
			i++
			continue
		}
		if raw[i] != '"' {
			return nil
		}
		kStart := i + 1
		kEnd := skipString(raw, i)
		if kEnd < 0 {
			return nil
		}
		// A key with an escape never equals a plain key as bytes; compare them decoded would
		// need unescaping, and encoders never escape "payload".
		k := raw[kStart : kEnd-1]
		i = skipSpace(raw, kEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil
		}
		i = skipSpace(raw, i+1)
		vStart := i
		vEnd := skipValue(raw, i)
		if vEnd < 0 {
			return nil
		}
		if string(k) == key {
			found = raw[vStart:vEnd]
		}
		i = vEnd
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just after the string starting at b[i] == '"', or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index just after the value starting at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = skipString(b, j)
				if j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // number, true, false, null
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		return j
	}
}

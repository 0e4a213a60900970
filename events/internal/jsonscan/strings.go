package jsonscan

// Strings shares the strings of short values that repeat from one text to the next (an
// event's study, run and source, a payload's state, tool and model names), so that a reader
// allocates each once rather than once per text. It is a fixed table of recent values: a
// value whose slot holds another takes the slot. The zero value is ready to use; a nil
// *Strings shares nothing. Not safe for concurrent use.
type Strings struct {
	slots [stringSlots]string
}

const (
	stringSlots = 256
	// maxShared bounds the values kept: longer ones (ids, texts) rarely repeat.
	maxShared = 32
)

// get returns b as a string: the table's, if it holds one equal to b, else a new one, kept.
func (t *Strings) get(b []byte) string {
	if t == nil || len(b) > maxShared {
		return string(b)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &t.slots[h%stringSlots]
	if *slot == string(b) { // compared without a copy
		return *slot
	}
	*slot = string(b)
	return *slot
}

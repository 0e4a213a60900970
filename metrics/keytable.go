package metrics

// keyTable assigns dense ids to 128-bit keys in order of first insertion:
// open addressing with linear probing on the first key half, the full key
// kept once per id. It replaces map[key128]int32 because, with a million
// mostly distinct keys, Go maps spent most of ComputeCell's time in growth
// and clearing and most of its memory in slack; this table is one
// allocation that is reused across kinds and steps.
type keyTable struct {
	slots []tableSlot // power-of-two length, at most half full
	keys  []key128    // by id
}

// tableSlot is 8 bytes: the table is probed at random, and at a million
// keys its slots no longer fit in the caches, so each probe is a memory
// access; 16-byte slots (the whole first key half) took twice the memory
// and made a 10^6-run comparison's grouping markedly slower.
type tableSlot struct {
	tag uint32 // the first key half's upper 32 bits (its lower bits pick the slot)
	id  int32  // id+1; 0 marks an empty slot
}

func slotTag(k key128) uint32 { return uint32(k.a >> 32) }

// reset empties the table, keeping its memory, and makes room for n keys
// without growing.
func (t *keyTable) reset(n int) {
	want := 1024
	for want < 2*n {
		want *= 2
	}
	if len(t.slots) < want {
		t.slots = make([]tableSlot, want)
	} else {
		clear(t.slots)
	}
	if cap(t.keys) < n {
		t.keys = make([]key128, 0, n)
	}
	t.keys = t.keys[:0]
}

func (t *keyTable) len() int { return len(t.keys) }

// id returns the id of k, inserting it with the next id if absent.
func (t *keyTable) id(k key128) (id int32, inserted bool) {
	if 2*(len(t.keys)+1) > len(t.slots) {
		t.grow()
	}
	mask, tag := uint64(len(t.slots)-1), slotTag(k)
	for i := k.a & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			id = int32(len(t.keys))
			t.keys = append(t.keys, k)
			*s = tableSlot{tag: tag, id: id + 1}
			return id, true
		}
		if s.tag == tag && t.keys[s.id-1] == k {
			return s.id - 1, false
		}
	}
}

func (t *keyTable) grow() {
	n := max(1024, 2*len(t.slots))
	slots := make([]tableSlot, n)
	mask := uint64(n - 1)
	for _, s := range t.slots {
		if s.id == 0 {
			continue
		}
		i := t.keys[s.id-1].a & mask
		for slots[i].id != 0 {
			i = (i + 1) & mask
		}
		slots[i] = s
	}
	t.slots = slots
}

// find returns the id of k, if present.
func (t *keyTable) find(k key128) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask, tag := uint64(len(t.slots)-1), slotTag(k)
	for i := k.a & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return 0, false
		}
		if s.tag == tag && t.keys[s.id-1] == k {
			return s.id - 1, true
		}
	}
}

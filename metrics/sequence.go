package metrics

// Levenshtein returns the unit-cost edit distance (insertions, deletions,
// substitutions) between two sequences of tool names.
func Levenshtein(a, b []string) int {
	var row []int
	return levenshtein(a, b, &row)
}

// SequenceSimilarity returns 1 − Levenshtein(a, b) / max(|a|, |b|), and 1
// for two empty sequences: the Tool Sequence Similarity of one pair.
func SequenceSimilarity(a, b []string) float64 {
	m := max(len(a), len(b))
	if m == 0 {
		return 1
	}
	return 1 - float64(Levenshtein(a, b))/float64(m)
}

// levenshtein runs the one-row dynamic programme; *scratch is reused
// across calls and grown as needed.
func levenshtein[T comparable](a, b []T, scratch *[]int) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(b) == 0 {
		return len(a)
	}
	// Strip the common prefix and suffix: they never change the distance,
	// and traces that differ in one step are the common case.
	for len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(b) == 0 {
		return len(a)
	}
	if cap(*scratch) < len(b)+1 {
		*scratch = make([]int, len(b)+1)
	}
	row := (*scratch)[:len(b)+1]
	for j := range row {
		row[j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev := row[0] // D[i-1][j-1]
		row[0] = i
		for j := 1; j <= len(b); j++ {
			cur := row[j] // D[i-1][j]
			best := prev
			if a[i-1] != b[j-1] {
				best = min(prev, cur, row[j-1]) + 1
			}
			row[j] = best
			prev = cur
		}
	}
	return row[len(b)]
}

// myers computes the Levenshtein distance between a pattern of length m,
// 1 ≤ m ≤ 64, whose match masks are in peq (peq[c] has bit i set iff
// pattern[i] == c), and text, with Myers' bit-parallel algorithm in
// Hyyrö's formulation: one pass over text, a few word operations per
// symbol. The horizontal delta of the top row is +1 (global distance).
func myers(peq []uint64, m int, text []int32) int {
	high := uint64(1) << (m - 1)
	pv, mv := ^uint64(0), uint64(0)
	if m < 64 {
		pv = (uint64(1) << m) - 1
	}
	score := m
	for _, c := range text {
		eq := peq[c]
		xv := eq | mv
		xh := (((eq & pv) + pv) ^ pv) | eq
		ph := mv | ^(xh | pv)
		mh := pv & xh
		if ph&high != 0 {
			score++
		} else if mh&high != 0 {
			score--
		}
		ph = ph<<1 | 1
		mh <<= 1
		pv = mh | ^(xv | ph)
		mv = ph & xv
	}
	return score
}

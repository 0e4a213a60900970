package metrics

// fracSum accumulates a sum of rationals num/den with small integer
// denominators exactly: ones + Σ_d byDen[d] / d. The float result is formed
// once, in ascending d, so it does not depend on the order in which pairs
// were visited: the grouped computation and a loop over all pairs give
// bit-identical values. (int64 is ample: a cell of 10⁶ runs with sequences
// of 10⁶ steps stays below 2⁶³.)
type fracSum struct {
	ones  int64
	byDen []int64
}

func (f *fracSum) add(num, den int, w int64) {
	if den == 0 {
		f.ones += w
		return
	}
	if num == den {
		f.ones += w
		return
	}
	if den >= len(f.byDen) {
		f.byDen = append(f.byDen, make([]int64, den+1-len(f.byDen))...)
	}
	f.byDen[den] += int64(num) * w
}

func (f *fracSum) value() float64 {
	v := float64(f.ones)
	for d, s := range f.byDen {
		if d > 0 && s != 0 {
			v += float64(s) / float64(d)
		}
	}
	return v
}

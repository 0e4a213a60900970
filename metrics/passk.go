package metrics

import "fmt"

// TaskTrials is one task's n trials with c successes.
type TaskTrials struct {
	Trials    int `json:"trials"`
	Successes int `json:"successes"`
}

// PassHatK returns pass^k: the mean over tasks of C(c, k) / C(n, k), the
// probability that k trials drawn without replacement from a task's n all
// succeed. Every task needs k ≤ n. The ratio is formed as the product
// Π_{i<k} (c−i)/(n−i), which never overflows.
func PassHatK(tasks []TaskTrials, k int) (float64, error) {
	if len(tasks) == 0 {
		return 0, fmt.Errorf("%w: PassHatK: no tasks", ErrEmpty)
	}
	if k < 1 {
		return 0, fmt.Errorf("%w: PassHatK: k = %d < 1", ErrInvalidArgument, k)
	}
	var sum float64
	for i, t := range tasks {
		if t.Trials < k || t.Successes < 0 || t.Successes > t.Trials {
			return 0, fmt.Errorf("%w: PassHatK: task %d has %d/%d successes, k = %d", ErrInvalidArgument, i, t.Successes, t.Trials, k)
		}
		sum += passHatK1(t.Successes, t.Trials, k)
	}
	return sum / float64(len(tasks)), nil
}

func passHatK1(c, n, k int) float64 {
	r := 1.0
	for i := 0; i < k; i++ {
		if c-i <= 0 {
			return 0
		}
		r *= float64(c-i) / float64(n-i)
	}
	return r
}

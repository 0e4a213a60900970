// Package metrics computes ditto's determinism metrics and statistical
// tests: pure computation over runs (standard library and gonum only; no
// I/O, no SQL, no cgo). The definitions, with a worked example of each
// metric and test, how to read it and the smallest N at which it means
// something, are in docs/metrics.md at the root of the repository; the
// tests check that document's examples against this package
// (doc_examples_test.go) and reproduce the SciPy and statsmodels reference
// values of testdata/golden.json to 1e-9 (see testdata/README.md).
//
// # Cells
//
// A caller reduces each run of a cell to a Run and calls ComputeCell:
//
//	m, err := metrics.ComputeCell(runs, metrics.Options{Seed: 1})
//
// CellMetrics holds Reproducibility Rate (A(sig_trace)), the Determinism
// Index and its three parts (tools, states, output), plan agreement, output
// agreement with the distinct count and modal share, Tool Sequence
// Similarity, Argument Consistency, the success rate with its 95% Wilson
// interval, pass^k for k = 1, 2, 4, 8 (k ≤ N; per cell C(c, k)/C(N, k)),
// token and latency Summaries, harness activity (counts and per-run
// rates), and the divergence profile. Every pairwise metric is an Estimate:
// value, leave-one-run-out jackknife SE, and, when sampled, Estimated and
// the Monte Carlo SamplingSE. Undefined values are Value{Valid: false} and
// marshal to JSON null: pairwise metrics with N < 2, jackknife SEs with
// N < 3, AC with no aligned calls, everything but counts in an empty cell.
// No output holds NaN or ±Inf, and nothing panics on valid Go values.
//
// # Scale
//
// Runs are grouped once per signature kind (plan, states, tools, calls,
// output, trace, argument sequence) by a 128-bit hash of their framed bytes;
// every agreement A = Σ n_k(n_k−1)/(N(N−1)) is then O(D). The jackknife needs
// no pair loop either: leaving out a run of group k lowers Σ n(n−1) by
// 2(n_k−1), so the runs of a group share their leave-one-out value; for TSS
// and AC the same holds with the group's row sum Σ_h n_h s(g, h), which the
// D² loop over distinct sequences yields for free. TSS is exact while the
// cell has at most Options.MaxExactDistinct distinct tool sequences (a
// bit-parallel Levenshtein over the D(D−1)/2 pairs), AC while it has at
// most that many distinct argument sequences: step by step over the
// distinct arguments, either by the D²/2 Jaccard overlaps or, when
// cheaper, by counting the runs that share each subset of argument leaves
// and inverting the counts into the number of pairs sharing exactly i
// leaves (Σ 2^leaves table operations; see acsubsets.go). Beyond the
// threshold AC is still exact when that subset work fits
// Options.MaxSubsetWork (arguments with few leaves); otherwise, and for
// TSS, the pair sample is used. Exact point estimates sum exact rationals
// (integer numerators per denominator), so they are bit-identical to an
// all-pairs loop and independent of run order. The sample is
// Options.SamplePairs ordered run pairs drawn with a seeded generator as
// anchor runs × 64 partners: SamplingSE is the
// delta-method SE over the independent anchors, and the jackknife SE is
// estimated from the variance of the anchors' row means less their
// within-anchor noise (accurate to about 35%, or to SamplingSE when runs
// barely differ in their mean similarity). The divergence profile refines
// prefix classes of the distinct call sequences step by step and retires a
// class once it holds a single sequence. Nothing loops over all run pairs.
//
// ComputeCell's results are a deterministic function of the runs in the
// given order (group numbering follows first appearance; hash seeds never
// reach a result). Exact point estimates do not depend on the order; SEs
// depend on it only through float rounding, and sampled estimates through
// which runs the seed picks, so callers wanting byte-identical reports
// should pass runs in a canonical order (e.g. by run ID).
//
// # Definitions fixed here
//
//   - Signatures (PlanSignature, …, TraceSignature) are SHA-256 over a
//     domain tag and the field's framed bytes: every string as its uvarint
//     length and bytes, every list as its uvarint count and elements, calls
//     as (tool, args) pairs. sig_trace covers plan, states, calls and output.
//   - AC leaves are (JSON path, canonical scalar); an empty object or array
//     below the root is a leaf ("{}" or "[]"), an empty root has no leaves;
//     arguments that are not JSON are one opaque leaf. See leaves.go.
//   - Quantiles are Hyndman–Fan type 7 (linear interpolation between order
//     statistics, h = (n−1)p; NumPy's and R's default, DuckDB's
//     quantile_cont). SD is the sample SD (n − 1).
//   - The divergence profile has one entry per step k from 0 to the longest
//     call sequence − 1; a run without a call at k differs there from one
//     with a call.
//   - Mann–Whitney: exact when there are no ties and min(n1, n2) ≤ 8
//     (computed as a Gaussian binomial, cheap even for 8 against 10⁶),
//     otherwise normal with tie and continuity correction; when all values
//     are tied the variance is 0 and p = 1.
//   - Fisher's exact test sums, in log space, the tables whose probability
//     is ≤ the observed × (1 + 1e-7); McNemar is the exact binomial form.
//   - Permutation tests count |Δ*| ≥ |Δ| with a relative tolerance of 1e-9.
//
// # Comparing cells
//
// Compare(a, b, cfg) returns the comparisons of cell b against the
// reference cell a (success: Fisher, and McNemar when every run has a
// PairKey; RR, DI, TSS, AC: permutation tests sharing one seeded sequence
// of permutations; tokens and latency: Mann–Whitney U with Cliff's δ).
// Difference is always B − A, and Cliff's δ has the same orientation
// (positive when B tends to be larger). After collecting every comparison
// of a report, AdjustBH fills the Benjamini–Hochberg adjusted p and the
// verdict (p̃ < 0.05). A comparison that cannot be made has a null P and a Reason.
//
// The building blocks are exported for callers that group in SQL:
// Agreement and AgreementEstimate take the group counts directly;
// Levenshtein, SequenceSimilarity, ArgumentJaccard, PassHatK, Wilson,
// FisherExact, McNemarExact, MannWhitneyU (and its Exact and Asymptotic
// forms), BenjaminiHochberg, Summarize, Quantile and PermutationTest stand
// alone.
//
// Compare's cost is one ComputeCell per cell plus, per permutation, O(n)
// counting and, for TSS and AC, O(D²) over the pooled distinct sequences
// present (D ≤ CompareConfig.PermExactDistinct) or a fixed pair sample per
// side beyond that: about 0.3 s of CPU for two cells of 100 runs and
// B = 10,000 (see BenchmarkCompare).
//
// JSON: CellMetrics, Estimate, Summary and Comparison marshal with
// snake_case keys; undefined values are null. The analyzer's documented
// report schema is built from these.
//
// Concurrency: every function is safe for concurrent use; none retains its
// arguments.
package metrics

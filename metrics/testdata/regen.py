#!/usr/bin/env python3
"""Recompute the reference values in golden.json with SciPy and statsmodels.

golden.json holds, per key, a list of cases: inputs and the values an
independent implementation gives for them. The Go tests in golden_test.go
must reproduce those values (absolute 1e-9, relative 1e-9 below 1e-6). This
script recomputes every value from the stored inputs, so that anyone can check
the file against the libraries, or extend it: append a case with its inputs
(any placeholder for the outputs) and run with --write.

    python3 regen.py            # compare the file with the libraries
    python3 regen.py --write    # rewrite the outputs in place

The stored values were computed with SciPy 1.10.1 and statsmodels 0.13.5
(Debian 12 packages python3-scipy and python3-statsmodels; or
`pip install scipy==1.10.1 statsmodels==0.13.5`). Other versions may differ
in the last digits. The script is not part of `make test`: the Go tests read
the stored values, and need neither Python nor network access.
"""

import argparse
import json
import math
import os
import sys
from collections import Counter

import scipy
import statsmodels
from scipy.special import comb
from scipy.stats import fisher_exact, mannwhitneyu
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden.json")


def fisher(case):
    # SciPy's two-sided p sums the tables no more probable than the observed
    # one (with a relative tolerance of 1e-7).
    _, p = fisher_exact(case["table"], alternative="two-sided")
    return {"p": float(p)}


def mcnemar_exact(case):
    # Only the discordant cells matter to the exact test.
    r = mcnemar([[0, case["b"]], [case["c"], 0]], exact=True)
    return {"p": float(r.pvalue)}


def mwu(case, method):
    x, y = case["x"], case["y"]
    r = mannwhitneyu(x, y, alternative="two-sided", method=method, use_continuity=True)
    u1 = float(r.statistic)  # SciPy >= 1.7 returns U of the first sample
    out = {"u1": u1, "p": float(r.pvalue)}
    if method == "asymptotic":
        nm = len(x) * len(y)
        out["cliffs_delta"] = (2 * u1 - nm) / nm  # = 2 U1 / (n1 n2) - 1
    return out


def wilson(case):
    low, high = proportion_confint(case["successes"], case["n"], alpha=0.05, method="wilson")
    return {"low": float(low), "high": float(high)}


def bh(case):
    reject, adjusted, _, _ = multipletests(case["p"], alpha=0.05, method="fdr_bh")
    return {"adjusted": [float(v) for v in adjusted], "reject_at_0.05": [bool(v) for v in reject]}


def levenshtein(a, b):
    # Unit-cost edit distance; neither library has one for sequences of names.
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            cur = row[j]
            row[j] = prev if ca == cb else 1 + min(prev, cur, row[j - 1])
            prev = cur
    return row[len(b)]


def sequence_similarity(case):
    a, b = case["a"], case["b"]
    d = levenshtein(a, b)
    m = max(len(a), len(b))
    return {"distance": d, "similarity": 1.0 if m == 0 else 1 - d / m}


def pairwise_agreement(case):
    sigs = case["signatures"]
    n = len(sigs)
    same = sum(comb(c, 2, exact=True) for c in Counter(sigs).values())
    return {"agreement": same / comb(n, 2, exact=True)}


def pass_hat_k(case):
    k = case["k"]
    per_task = [comb(t["successes"], k, exact=True) / comb(t["trials"], k, exact=True) for t in case["tasks"]]
    return {"pass_hat_k": sum(per_task) / len(per_task)}


COMPUTE = {
    "fisher_exact_two_sided": fisher,
    "mcnemar_exact": mcnemar_exact,
    "mann_whitney_u_asymptotic": lambda c: mwu(c, "asymptotic"),
    "mann_whitney_u_exact": lambda c: mwu(c, "exact"),
    "wilson_95": wilson,
    "benjamini_hochberg": bh,
    "sequence_similarity": sequence_similarity,
    "pairwise_agreement": pairwise_agreement,
    "pass_hat_k": pass_hat_k,
}


def differs(got, want):
    if isinstance(want, list):
        return len(got) != len(want) or any(differs(g, w) for g, w in zip(got, want))
    if isinstance(want, bool) or isinstance(want, int) and isinstance(got, int):
        return got != want
    if abs(want) < 1e-6:
        return abs(got - want) > 1e-9 * abs(want)
    return abs(got - want) > 1e-9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the outputs in golden.json")
    args = ap.parse_args()
    with open(GOLDEN) as f:
        golden = json.load(f)
    bad = 0
    for key, fn in COMPUTE.items():
        for i, case in enumerate(golden[key]):
            for field, got in fn(case).items():
                if field not in case or differs(got, case[field]):
                    bad += 1
                    print(f"{key}[{i}].{field}: file {case.get(field)!r}, library {got!r}")
                case[field] = got
    if args.write:
        # Keep the stored label when SciPy is the version that made the file
        # (the file then comes back byte for byte); otherwise name both.
        if not golden["generator"].startswith(f"scipy {scipy.__version__},"):
            golden["generator"] = f"scipy {scipy.__version__}, statsmodels {statsmodels.__version__}"
        with open(GOLDEN, "w") as f:
            json.dump(golden, f, indent=1)
        print(f"wrote {GOLDEN}")
        return 0
    total = sum(len(golden[k]) for k in COMPUTE)
    print(f"{total} cases, {bad} values differ beyond 1e-9 (scipy {scipy.__version__}, statsmodels {statsmodels.__version__})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

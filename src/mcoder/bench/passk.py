"""pass@k with the unbiased estimator (Chen et al. 2021, "Evaluating Large Language Models
Trained on Code"): draw n samples of a problem, c of them pass; the chance that at least one of
k samples drawn without replacement from those n passes is

    pass@k = 1 - C(n-c, k) / C(n, k)

The binomials overflow floats for the n used in practice, so it is computed as the product
1 - prod_{i=n-c+1..n} (1 - k/i), which equals the ratio above term by term.

With fewer samples than k (n < k) the estimator is undefined: ``pass_at_k`` returns None and
the callers report the problem as "not computable" instead of quietly using n in place of k.
"""

from __future__ import annotations

from collections.abc import Iterable


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """The unbiased pass@k of one problem with ``c`` passing samples out of ``n``; None if k > n."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if k > n:
        return None
    if n - c < k:  # every draw of k samples contains a passing one
        return 1.0
    failing_draws = 1.0  # C(n-c, k) / C(n, k), one factor per passing sample
    for i in range(n - c + 1, n + 1):
        failing_draws *= 1.0 - k / i
    return 1.0 - failing_draws


def mean_pass_at_k(counts: Iterable[tuple[int, int]], k: int) -> tuple[float | None, int, int]:
    """Mean pass@k over problems given as (n, c) pairs.

    Returns (mean or None when no problem has n >= k, problems averaged, problems left out
    because they have fewer than k samples).
    """
    total = 0.0
    used = 0
    skipped = 0
    for n, c in counts:
        value = pass_at_k(n, c, k)
        if value is None:
            skipped += 1
            continue
        total += value
        used += 1
    return (total / used if used else None), used, skipped

"""Fitting the logistic-regression half of the learned model (training only: needs numpy and scipy,
which `cudoctor` itself never imports; tools/train_explain_model.py and tools/cv_explain.py do).

A multinomial logistic regression over the same binary tokens as the naive Bayes, L2-regularised and
fitted by L-BFGS. The naive Bayes reads each token alone; the regression weighs tokens against each
other, which puts the right cause among the first three more often (cross-validated, docs/explain.md).
Small weights are dropped and the rest rounded, so what ships stays a few hundred KiB.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

C = 1.0  # inverse regularisation strength, as scikit-learn counts it (penalty ||w||^2 / 2C over the sum of losses)
KEEP_AT = 0.02  # weights below this (in absolute value) are not shipped
DIGITS = 3


def fit(
    docs: Sequence[tuple[Sequence[str], str]], vocab: Sequence[str], classes: Sequence[str]
) -> tuple[dict[str, dict[int, float]], list[float]]:
    """Token -> {class index: weight} (small ones dropped) and one bias per class."""
    import numpy as np
    from scipy import optimize, sparse

    col = {t: i for i, t in enumerate(vocab)}
    cls = {c: i for i, c in enumerate(classes)}
    rows, cols = [], []
    for r, (toks, _) in enumerate(docs):
        for t in set(toks):
            if t in col:
                rows.append(r)
                cols.append(col[t])
    n, v, k = len(docs), len(vocab), len(classes)
    x = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, v))
    y = np.zeros((n, k))
    y[np.arange(n), [cls[c] for _, c in docs]] = 1.0

    l2 = 1.0 / (C * n)

    def loss(theta: Any) -> tuple[float, Any]:
        w = theta[: v * k].reshape(v, k)
        b = theta[v * k :]
        z = x @ w + b
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        nll = -np.sum(y * np.log(p + 1e-12)) / n + l2 * np.sum(w * w) / 2
        g = (p - y) / n
        gw = x.T @ g + l2 * w
        return float(nll), np.concatenate([np.asarray(gw).ravel(), g.sum(axis=0)])

    theta0 = np.zeros(v * k + k)
    res = optimize.minimize(loss, theta0, jac=True, method="L-BFGS-B", options={"maxiter": 300})
    w = res.x[: v * k].reshape(v, k)
    bias = [round(float(b), DIGITS) for b in res.x[v * k :]]
    weights: dict[str, dict[int, float]] = {}
    for t, i in col.items():
        row = {j: round(float(w[i, j]), DIGITS) for j in range(k) if abs(w[i, j]) >= KEEP_AT}
        if row:
            weights[t] = row
    return weights, bias

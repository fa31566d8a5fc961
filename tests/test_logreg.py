"""Tests for maelab.logreg (exact multinomial logistic regression in torch) and linear_probe(method="logreg_torch").

References are independent: scikit-learn's LogisticRegression run to a tight tolerance on the same standardised
features, the objective written out by hand in numpy, and scikit-learn's own C selection through linear_probe's
"logreg" method.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from maelab import ParameterError
from maelab import evaluate as E
from maelab.logreg import LogRegPath, TorchLogisticRegression


def np_objective(coef, intercept, z, y, C):
    """scikit-learn's multinomial objective by hand: mean cross-entropy + ||W||^2 / (2 C n)."""
    logits = z @ coef.T + intercept
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(y)), y].mean() + (coef**2).sum() / (2 * C * len(y))


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    return x[idx[:900]], y[idx[:900]], x[idx[900:1500]], y[idx[900:1500]]


@pytest.mark.parametrize("C", [1e-3, 0.1, 10.0])
@pytest.mark.parametrize("solver_params", [3000, 1])  # Newton, and the whitened L-BFGS fallback
def test_same_optimum_as_scikit_learn(digits, C, solver_params):
    xtr, ytr, xte, yte = digits
    ours = TorchLogisticRegression(C, newton_max_params=solver_params, max_iter=20000).fit(xtr, ytr)
    assert ours.solver_ == ("newton" if solver_params == 3000 else "lbfgs")
    scaler = StandardScaler().fit(xtr)
    z = scaler.transform(xtr)
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=100000).fit(z, ytr)
    f_ref = np_objective(ref.coef_, ref.intercept_, z, ytr, C)
    f_ours = np_objective(ours.coef_, ours.intercept_, z, ytr, C)
    assert ours.loss_ == pytest.approx(f_ours, rel=1e-10)
    assert f_ours <= f_ref * (1 + 1e-6) and f_ref <= f_ours * (1 + 1e-6)
    acc_ours = (ours.predict(xte) == yte).mean()
    acc_ref = (ref.predict(scaler.transform(xte)) == yte).mean()
    assert abs(acc_ours - acc_ref) <= 2 / len(yte)  # at most two borderline test points
    np.testing.assert_allclose(ours.mean_, scaler.mean_)


def test_constant_feature_two_classes_and_labels_kept():
    x = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    y = np.array([7, 7, 9, 9])
    m = TorchLogisticRegression(1.0).fit(x, y)
    assert list(m.classes_) == [7, 9] and list(m.predict(x)) == [7, 7, 9, 9] and m.scale_[1] == 1.0
    assert m.grad_max_ < 1e-8
    with pytest.raises(ParameterError, match="labels"):
        TorchLogisticRegression(1.0).fit(x, np.zeros(4))
    with pytest.raises(ParameterError, match="C must be"):
        TorchLogisticRegression(0.0)


def test_warm_started_path_reaches_the_cold_optimum(digits):
    xtr, ytr, _, _ = digits
    path = LogRegPath()
    for C in (1e-3, 1e-2, 1e-1, 1.0):
        warm = path(xtr, ytr, C, 1000)
    cold = TorchLogisticRegression(1.0).fit(xtr, ytr)
    assert warm.loss_ == pytest.approx(cold.loss_, rel=1e-12)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-6)


def test_linear_probe_logreg_torch_follows_the_same_protocol(digits):
    xtr, ytr, xte, yte = (torch.from_numpy(a) for a in digits)
    xtr, xte = xtr.float(), xte.float()
    ref = E.linear_probe(xtr, ytr, xte, yte, method="logreg", max_iter=5000)
    fast = E.linear_probe(xtr, ytr, xte, yte, method="logreg_torch")
    assert fast.method == "logreg_torch" and set(fast.val_acc) == set(ref.val_acc)
    for c in ref.val_acc:  # same validation split, same C grid: validation accuracies agree
        assert abs(fast.val_acc[c] - ref.val_acc[c]) <= 2 / 180 + 1e-12
    assert fast.C == ref.C
    assert abs(fast.test_acc - ref.test_acc) <= 2 / len(yte)
    assert torch.equal(fast.predict(xte), fast.predict(xte.numpy()))
    fixed = E.linear_probe(xtr, ytr, xte, yte, method="logreg_torch", C=0.5)
    assert fixed.C == 0.5 and fixed.val_acc == {}


def test_newton_hessian_is_the_kronecker_sum_by_hand():
    from maelab.logreg import _newton_hessian

    g = torch.Generator().manual_seed(0)
    n, d, k = 300, 5, 4
    a = torch.cat([torch.randn(n, d, generator=g, dtype=torch.float64), torch.ones(n, 1, dtype=torch.float64)], 1)
    p = torch.softmax(torch.randn(n, k, generator=g, dtype=torch.float64), 1)
    ref = (
        sum(
            np.kron(np.diag(p[i].numpy()) - np.outer(p[i].numpy(), p[i].numpy()), np.outer(a[i].numpy(), a[i].numpy()))
            for i in range(n)
        )
        / n
    )
    np.testing.assert_allclose(_newton_hessian(a, p, chunk=64).numpy(), ref, atol=1e-14)


def test_reused_lu_factors_give_the_steps_of_a_fresh_solve_bit_for_bit(digits, monkeypatch):
    """Newton reuses the LU factors of a reused Hessian; on the CPU that is LAPACK's getrf + getrs, what
    ``torch.linalg.solve`` runs each step, so a path's fits equal, bit for bit, those of a solve per step (the
    committed probes were computed with one): the same seed gives the same numbers across the change."""
    import maelab.logreg as L

    x, y = digits[:2]

    def path_fits():
        path = LogRegPath()
        return [path(x, y, C, 200) for C in (0.01, 1.0, 100.0)]

    reused = path_fits()
    monkeypatch.setattr(L.torch.linalg, "lu_factor", lambda a: (a, None))  # "factors": the matrix itself
    monkeypatch.setattr(L.torch.linalg, "lu_solve", lambda a, _piv, b: torch.linalg.solve(a, b))
    fresh = path_fits()
    for a, b in zip(reused, fresh, strict=True):
        assert a.n_iter_ == b.n_iter_ and np.array_equal(a.coef_, b.coef_)
        assert np.array_equal(a.intercept_, b.intercept_)


@pytest.mark.parametrize("C", [1e-3, 10.0])
@pytest.mark.parametrize("solver", ["newton", "lbfgs"])
def test_fewer_examples_than_features_reach_scikit_learn_s_optimum_in_the_row_space(C, solver, monkeypatch):
    """With n < d (a small training set of raw pixels) the solvers work on the n-dimensional side: Newton in the
    features' row space where K (n + 1) parameters allow it (here 460, where K (d + 1) = 4,010 would not), else the
    whitened L-BFGS with its eigenbasis from the n x n Gram matrix, not the d x d covariance. Either reaches
    scikit-learn's optimum on all d features."""
    import maelab.logreg as L

    x, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(1)
    x = np.repeat(x[:45], 25, axis=1)[:, :400] + 0.01 * rng.standard_normal((45, 400))  # n = 45 < d = 400
    y = y[:45]
    sizes, eigh = [], torch.linalg.eigh
    monkeypatch.setattr(L.torch.linalg, "eigh", lambda a: sizes.append(tuple(a.shape)) or eigh(a))
    ours = TorchLogisticRegression(C, newton_max_params=3000 if solver == "newton" else 1, max_iter=20000).fit(x, y)
    assert ours.solver_ == solver and sizes == ([] if solver == "newton" else [(45, 45)])
    z = StandardScaler().fit_transform(x)
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=100000).fit(z, y)
    f_ref = np_objective(ref.coef_, ref.intercept_, z, y, C)
    f_ours = np_objective(ours.coef_, ours.intercept_, z, y, C)
    assert f_ours <= f_ref * (1 + 1e-6) and f_ref <= f_ours * (1 + 1e-6)
    assert ours.coef_.shape == (10, 400) and ours.grad_max_ < 1e-6

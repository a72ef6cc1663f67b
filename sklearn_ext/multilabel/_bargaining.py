"""The Nash bargaining solution over players' gradients (NBCG's stage 3)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

__all__ = ["nash_bargaining_weights"]

# Newton steps of the bargaining solution, and the largest weight relative to
# the mean weight.
_NASH_ITER = 30
_NASH_MAX_RATIO = 10.0


def nash_bargaining_weights(
    gram, surplus, *, n_iter=_NASH_ITER, init=None, return_raw=False
):
    """Compute the weights of the Nash bargaining solution over players' gradients.

    Player ``c`` has gradient ``g_c`` and surplus ``s_c >= 0`` over its
    disagreement point. The bargaining update ``d = sum_c alpha_c g_c`` maximises
    ``sum_c log(s_c + g_c . d)`` (the Nash product of the players' utilities,
    linearised) in a ball; its first-order conditions are

    ``alpha_c * (s_c + (G alpha)_c) = 1``,  with ``G = [g_c . g_d]``.

    With zero surplus this is Nash-MTL's condition ``alpha_c (G alpha)_c = 1``
    [1]_ (an equal share of the update for every player when gradients are
    orthogonal); a player far above its disagreement point gets a weight near
    ``1 / s_c``, so under-served players are prioritised. The Gram matrix is
    scaled to unit mean diagonal first, so that surpluses (relative losses) and
    gradient terms are on one scale. The conditions are the stationarity
    conditions of the strictly convex function
    ``a' G a / 2 + s' a - sum(log a)`` on ``a > 0``, so the solution is unique
    and damped Newton steps find it. The weights are returned normalised to mean 1 and
    capped at 10 times the mean.

    Parameters
    ----------
    gram : ndarray of shape (n_players, n_players)
        Gram matrix of the players' gradients.
    surplus : ndarray of shape (n_players,)
        Non-negative surpluses over the disagreement point.
    n_iter : int, default=30
        Most Newton steps; they stop once every ``alpha_c (s_c + (G alpha)_c)``
        is within 1e-9 of 1.
    init : array-like of shape (n_players,), default=None
        Starting point, e.g. the raw solution of the previous minibatch.
    return_raw : bool, default=False
        Also return the solution before normalisation and capping (to pass
        as ``init`` next time).

    Returns
    -------
    alpha : ndarray of shape (n_players,)
        Positive weights with mean 1.
    raw : ndarray of shape (n_players,)
        Only with ``return_raw``: the solution of the conditions.

    References
    ----------
    .. [1] A. Navon, A. Shamsian, I. Achituve, H. Maron, K. Kawaguchi,
       G. Chechik and E. Fetaya, "Multi-task learning as a bargaining game",
       ICML 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.multilabel import nash_bargaining_weights
    >>> G = np.diag([4.0, 1.0])  # orthogonal gradients with norms 2 and 1
    >>> w = nash_bargaining_weights(G, np.zeros(2))
    >>> np.round(w[1] / w[0], 3)  # equal shares: weights inverse to the norms
    np.float64(2.0)
    """
    G = np.array(gram, dtype=np.float64)
    s = np.clip(np.asarray(surplus, dtype=np.float64), 0, None)
    G /= max(G.diagonal().mean(), 1e-30)
    G[np.diag_indices_from(G)] += 1e-6
    raw = _solve_conditions(G, s, n_iter, init)
    alpha = _cap_weights(raw / raw.mean())
    return (alpha, raw) if return_raw else alpha


def _solve_conditions(G, s, n_iter, init):
    """Solve ``alpha_c (s_c + (G alpha)_c) = 1`` by damped Newton steps.

    The conditions are the stationarity conditions of the strictly convex
    ``phi(a) = a'Ga / 2 + s'a - sum(log a)`` on ``a > 0``; the steps start from
    ``init`` when there is one. (NumPy: for these small systems it is far
    faster than torch, on any device.)
    """

    def objective(a):
        return 0.5 * a @ G @ a + s @ a - np.log(a).sum()

    if init is None:
        alpha = 1.0 / (s + np.sqrt(G.diagonal()))
    else:
        alpha = np.clip(np.asarray(init, dtype=np.float64), 1e-12, None)
    value = objective(alpha)
    for _ in range(n_iter):
        grad = G @ alpha + s - 1.0 / alpha
        # Relative residual of alpha_c (s_c + (G alpha)_c) = 1.
        if np.abs(grad * alpha).max() < 1e-9:
            break
        hess = G + np.diag(1.0 / alpha**2)
        step = np.linalg.solve(hess, grad)
        # Largest step that keeps every weight positive, then backtracking.
        positive = step > 0
        t = min(1.0, (0.99 * alpha[positive] / step[positive]).min(initial=1.0))
        for _ in range(30):
            candidate = alpha - t * step
            new = objective(candidate)
            if new <= value:
                break
            t *= 0.5
        else:
            break
        alpha, value = candidate, new
    return alpha


def _cap_weights(alpha):
    """Cap weights of mean 1 at ``_NASH_MAX_RATIO``, keeping the mean 1.

    Weights at the cap stay there while the others are rescaled (a few passes).
    """
    alpha = alpha.copy()
    for _ in range(len(alpha)):
        over = alpha > _NASH_MAX_RATIO
        if not over.any():
            break
        alpha[over] = _NASH_MAX_RATIO
        free = ~over & (alpha < _NASH_MAX_RATIO)
        budget = len(alpha) - alpha[~free].sum()
        if not free.any() or budget <= 0:
            alpha = np.full_like(alpha, 1.0)
            break
        alpha[free] *= budget / alpha[free].sum()
    return alpha

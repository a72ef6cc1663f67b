"""The Nash bargaining solution over players' gradients (NBCG's stage 3)."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.utils._torch import import_torch

__all__ = ["nash_bargaining_weights"]

# Newton steps of the bargaining solution, the step sizes tried at each, and
# the largest weight relative to the mean weight.
_NASH_ITER = 30
_NASH_HALVINGS = 16
_NASH_MAX_RATIO = 10.0
_NASH_TOL = 1e-7


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
    and damped Newton steps find it. The weights are returned normalised to
    mean 1 and capped at 10 times the mean.

    The solve runs in torch (float64) on the device of ``gram`` when it is a
    tensor, so that a GPU-trained model never copies its minibatch statistics
    to the host; NumPy input gives NumPy output.

    Parameters
    ----------
    gram : ndarray or tensor of shape (n_players, n_players)
        Gram matrix of the players' gradients.
    surplus : ndarray or tensor of shape (n_players,)
        Non-negative surpluses over the disagreement point.
    n_iter : int, default=30
        Most Newton steps; they stop once every ``alpha_c (s_c + (G alpha)_c)``
        is within 1e-7 of 1.
    init : array-like or tensor of shape (n_players,), default=None
        Starting point, e.g. the raw solution of the previous minibatch.
    return_raw : bool, default=False
        Also return the solution before normalisation and capping (to pass
        as ``init`` next time).

    Returns
    -------
    alpha : ndarray or tensor of shape (n_players,)
        Positive weights with mean 1 (a float64 tensor on ``gram``'s device
        for tensor input).
    raw : ndarray or tensor of shape (n_players,)
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
    torch = import_torch()
    as_numpy = not isinstance(gram, torch.Tensor)
    device = "cpu" if as_numpy else gram.device
    G = torch.as_tensor(gram, dtype=torch.float64, device=device).clone()
    s = torch.as_tensor(surplus, dtype=torch.float64, device=device).clamp_min(0)
    G /= G.diagonal().mean().clamp_min(1e-30)
    G += 1e-6 * torch.eye(len(G), dtype=G.dtype, device=device)
    if init is not None:
        init = torch.as_tensor(init, dtype=torch.float64, device=device)
    raw = _solve_conditions(G, s, n_iter, init)
    alpha = _cap_weights(raw / raw.mean())
    if as_numpy:
        alpha, raw = alpha.numpy(), raw.numpy()
    return (alpha, raw) if return_raw else alpha


def _solve_conditions(G, s, n_iter, init):
    """Solve ``alpha_c (s_c + (G alpha)_c) = 1`` by damped Newton steps.

    The conditions are the stationarity conditions of the strictly convex
    ``phi(a) = a'Ga / 2 + s'a - sum(log a)`` on ``a > 0``; the steps start from
    ``init`` when there is one. A full Newton step is taken when it keeps
    every weight positive and does not increase ``phi`` (nearly always, from
    the previous minibatch's solution); otherwise the step sizes
    ``t_max 2^-k`` (``t_max`` the largest that keeps every weight positive)
    are tried all at once and the largest that does not increase ``phi`` is
    taken.
    """
    torch = import_torch()

    def objective(a):  # rows of a are candidate points
        return 0.5 * ((a @ G) * a).sum(-1) + a @ s - torch.log(a).sum(-1)

    if init is None:
        alpha = 1.0 / (s + G.diagonal().sqrt())
    else:
        alpha = init.clamp_min(1e-12)
    halvings = 0.5 ** torch.arange(_NASH_HALVINGS, dtype=G.dtype, device=G.device)
    eye = torch.eye(len(G), dtype=G.dtype, device=G.device)
    value = objective(alpha[None])[0]
    for _ in range(n_iter):
        grad = G @ alpha + s - 1.0 / alpha
        # Residual of alpha_c (s_c + (G alpha)_c) = 1.
        if float((grad * alpha).abs().max()) < _NASH_TOL:
            break
        step = torch.linalg.solve(G + eye / alpha**2, grad)
        full = alpha - step
        if bool((full > 0).all()):
            full_value = objective(full[None])[0]
            if full_value <= value:  # the full Newton step: the usual case
                alpha, value = full, full_value
                continue
        ratio = torch.where(step > 0, alpha / step, torch.full_like(alpha, np.inf))
        t = halvings * (0.99 * ratio.min()).clamp(max=1.0)
        candidates = alpha - t[:, None] * step
        values = objective(candidates)
        decrease = values <= value
        if not bool(decrease.any()):
            break
        # The largest step size that does not increase phi.
        first = torch.argmax(decrease.to(torch.int8))
        alpha, value = candidates[first], values[first]
    return alpha


def _cap_weights(alpha):
    """Cap weights of mean 1 at ``_NASH_MAX_RATIO``, keeping the mean 1.

    Weights at the cap stay there while the others are rescaled (a few passes:
    a rescaled weight can cross the cap).
    """
    torch = import_torch()
    alpha = alpha.clone()
    n = len(alpha)
    for _ in range(n):
        over = alpha > _NASH_MAX_RATIO
        if not bool(over.any()):
            break
        alpha[over] = _NASH_MAX_RATIO
        free = alpha < _NASH_MAX_RATIO
        budget = n - _NASH_MAX_RATIO * float((~free).sum())
        if not bool(free.any()) or budget <= 0:
            return torch.ones_like(alpha)
        alpha[free] *= budget / alpha[free].sum()
    return alpha

"""The per-step subproblem of hardness-aware unlearning (HAMU), in closed form.

With ``g_r`` the gradient of the retain loss and ``g_f`` the gradient of the
forget loss at the current parameters, a first-order step ``delta`` changes
the retain loss by ``g_r . delta`` and the forget loss by ``g_f . delta``.
HAMU asks for a *guaranteed* improvement of forget quality (the forget loss
rises by at least ``c``) at the least cost to the retain loss, within a trust
region of radius ``R``::

    minimise  g_r . delta   subject to   g_f . delta >= c,   ||delta|| <= R.

The solution (derived from the linear objective over a ball cut by a
half-space; when the ball reaches ``c`` the minimum lies on the sphere, so a
feasible step has norm exactly ``R``, except when ``g_r`` is parallel to
``g_f``: every point of the constraint's disk then costs the same, and its
centre, of norm ``c / ||g_f|| <= R``, is returned):

- **infeasible** when ``R ||g_f|| < c``: no step in the ball reaches the
  required improvement; the step returned is the smallest one that does,
  ``(c / ||g_f||^2) g_f``, of norm ``c / ||g_f|| > R``;
- **direct** when the steepest retain descent ``-R g_r / ||g_r||`` already
  raises the forget loss by ``c``, i.e. ``g_r . g_f <= -c ||g_r|| / R``;
- **rectified** otherwise: the constraint is active, and the step is its
  minimum-norm point plus the largest move against the part of ``g_r``
  orthogonal to ``g_f``::

      delta = (c / ||g_f||^2) g_f
              - sqrt(R^2 - c^2 / ||g_f||^2) g_r_perp / ||g_r_perp||,
      g_r_perp = g_r - (g_r . g_f / ||g_f||^2) g_f.

The *hardness* of the step is ``g_r . g_f``: when forget and retain data are
alike their gradients point the same way, and raising the forget loss raises
the retain loss too. The step's first-order change of the retain loss,
``g_r . delta``, is positive exactly when no step in the ball can improve
forgetting without degrading the retain set: degradation is then
unavoidable, which is when the user should consider stopping.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass

from sklearn_ext.utils._torch import import_torch

__all__ = ["HAMUStep", "hamu_step"]

BRANCHES = ("infeasible", "direct", "rectified")


@dataclass(frozen=True)
class HAMUStep:
    """One solved HAMU subproblem.

    Parameters
    ----------
    delta : Tensor of shape (n_params,)
        The parameter change.
    branch : {"infeasible", "direct", "rectified"}
        Which case of the closed form applied.
    hardness : float
        ``g_r . g_f``; larger means forget and retain pull together.
    cosine : float
        ``g_r . g_f / (||g_r|| ||g_f||)`` (0 when a gradient is zero).
    forget_change : float
        ``g_f . delta``: the first-order rise of the forget loss (``>= c``
        in every branch, ``= c`` when the constraint is active).
    retain_change : float
        ``g_r . delta``: the first-order change of the retain loss.
    degradation_unavoidable : bool
        True when the step is infeasible or ``retain_change > 0``: no step of
        norm at most ``R`` raises the forget loss by ``c`` without raising the
        retain loss.
    """

    delta: object
    branch: str
    hardness: float
    cosine: float
    forget_change: float
    retain_change: float
    degradation_unavoidable: bool


def hamu_step(g_retain, g_forget, improvement, radius):
    """Solve the HAMU subproblem for flat gradients.

    Parameters
    ----------
    g_retain : Tensor of shape (n_params,)
        Gradient of the retain loss (to be kept low).
    g_forget : Tensor of shape (n_params,)
        Gradient of the forget loss (to be raised).
    improvement : float
        ``c > 0``: the required first-order rise of the forget loss.
    radius : float
        ``R > 0``: the largest step norm.

    Returns
    -------
    step : HAMUStep
        The step, its branch, the hardness and the first-order changes.
    """
    torch = import_torch()
    if not (improvement > 0 and math.isfinite(improvement)):
        raise ValueError(f"improvement must be positive; got {improvement!r}.")
    if not (radius > 0 and math.isfinite(radius)):
        raise ValueError(f"radius must be positive; got {radius!r}.")
    g_r, g_f = g_retain.reshape(-1), g_forget.reshape(-1)
    dtype = torch.promote_types(g_r.dtype, g_f.dtype)
    g_r, g_f = g_r.to(dtype), g_f.to(dtype)
    if g_r.shape != g_f.shape:
        raise ValueError(
            f"the two gradients differ in size: {g_r.numel()} and {g_f.numel()}."
        )
    if not (torch.isfinite(g_r).all() and torch.isfinite(g_f).all()):
        raise ValueError("a gradient contains NaN or infinity.")
    nf2 = float(g_f @ g_f)
    nr = float(torch.linalg.vector_norm(g_r))
    if nf2 == 0.0:
        raise ValueError(
            "the forget gradient is zero: the forget loss cannot be raised to "
            "first order (is the forget set already at a stationary point?)."
        )
    nf = math.sqrt(nf2)
    dot = float(g_r @ g_f)
    cosine = dot / (nr * nf) if nr > 0 else 0.0
    if radius * nf < improvement:
        branch = "infeasible"
        delta = (improvement / nf2) * g_f
    elif nr > 0 and dot <= -improvement * nr / radius:
        branch = "direct"
        delta = (-radius / nr) * g_r
    else:
        branch = "rectified"
        delta = (improvement / nf2) * g_f
        perp = g_r - (dot / nf2) * g_f
        n_perp = float(torch.linalg.vector_norm(perp))
        slack = radius**2 - improvement**2 / nf2
        # n_perp is 0 when g_r is parallel to g_f: every point of the
        # constraint's disk then costs the same, and the centre is returned.
        if n_perp > 1e-12 * max(nr, 1.0) and slack > 0:
            delta = delta - (math.sqrt(slack) / n_perp) * perp
    retain_change = float(g_r @ delta)
    return HAMUStep(
        delta=delta,
        branch=branch,
        hardness=dot,
        cosine=cosine,
        forget_change=float(g_f @ delta),
        retain_change=retain_change,
        degradation_unavoidable=branch == "infeasible" or retain_change > 0,
    )

"""Plot the certified curve of a fitted :class:`MultiTaskGuarantee`."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_ext.utils._sklearn_compat import check_is_fitted

__all__ = ["plot_guarantee"]


def plot_guarantee(guarantee, *, ax=None, label=None, **kwargs):
    """Draw the certified curve ``p(g)`` of a fitted guarantee as a step plot.

    The curve is what :meth:`MultiTaskGuarantee.probability` reads: at each
    return level ``g`` (x axis), the probability ``p`` (y axis) with which a
    new task's expected return is certified to reach ``g``. It is drawn as
    the step function the certificate holds for: 1 up to the lower end of
    ``return_range``, then each certified probability up to its level, 0
    beyond the largest certified level.

    Parameters
    ----------
    guarantee : MultiTaskGuarantee
        A fitted guarantee.
    ax : matplotlib Axes, default=None
        Where to draw; None draws on a new figure.
    label : str, default=None
        Legend label of the curve.
    **kwargs
        Passed to ``Axes.step`` (colour, line style, ...).

    Returns
    -------
    ax : matplotlib Axes
        The axes drawn on.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.rl import MultiTaskGuarantee, plot_guarantee
    >>> rng = np.random.default_rng(0)
    >>> rates = rng.uniform(0.7, 1.0, size=200)
    >>> returns = (rng.random((200, 100)) < rates[:, None]).astype(float)
    >>> cert = MultiTaskGuarantee().fit(returns)
    >>> ax = plot_guarantee(cert, label="certified")  # doctest: +SKIP
    """
    check_is_fitted(guarantee, "curve_")
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "plot_guarantee needs matplotlib: pip install matplotlib."
        ) from exc
    if ax is None:
        _, ax = plt.subplots()
    low, high = guarantee._check_range()
    levels, probs = guarantee.curve_[:, 0], guarantee.curve_[:, 1]
    # p(g) = probs[i] for levels[i-1] < g <= levels[i]: a step drawn "pre".
    x = np.concatenate([[low], levels, [high]])
    y = np.concatenate([[1.0], probs, [0.0]])
    ax.step(x, y, where="pre", label=label, **kwargs)
    ax.set_xlim(low, high)
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("return level g (expected return of a new task)")
    ax.set_ylabel("certified probability p")
    if label is not None:
        ax.legend()
    return ax

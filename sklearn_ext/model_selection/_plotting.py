"""Plot the hyperparameter schedules of a fitted population-based search."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np

from sklearn_ext.model_selection._population import lineage
from sklearn_ext.utils._sklearn_compat import check_is_fitted

__all__ = ["plot_schedules"]


def _numeric(values):
    return all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)


def plot_schedules(search, params=None, *, axes=None):
    """Plot every member's hyperparameters over training, one panel per name.

    Each row of ``search.cv_results_`` (a member during one ready interval) is
    a horizontal segment from its ``start`` to its ``stop`` training step at
    the value it trained with, coloured by member; the lineage of the best
    member (``best_index_``) is drawn over them in black, and dotted vertical
    lines mark the restarts. Numeric hyperparameters spanning more than two
    decades get a log axis; listed values (strings, booleans, ...) are drawn
    at their position in the order first seen, labelled on the axis.

    Parameters
    ----------
    search : IPBTSearchCV
        A fitted search.
    params : list of str, default=None
        Hyperparameter names to plot; None plots every name that takes more
        than one value.
    axes : array-like of matplotlib Axes, default=None
        One per name; None creates a figure with one row of panels.

    Returns
    -------
    axes : ndarray of matplotlib Axes
        The panels, in the order of ``params``.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.linear_model import SGDClassifier
    >>> from sklearn_ext.model_selection import IPBTSearchCV, plot_schedules
    >>> X, y = load_digits(return_X_y=True)
    >>> search = IPBTSearchCV(
    ...     SGDClassifier(learning_rate="constant", random_state=0),
    ...     {"eta0": [1e-3, 1e-2, 1e-1], "alpha": [1e-5, 1e-3]},
    ...     population_size=4, budget=40, random_state=0,
    ... ).fit(X / 16, y)
    >>> axes = plot_schedules(search)  # doctest: +SKIP
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "plot_schedules needs matplotlib: pip install matplotlib."
        ) from exc
    check_is_fitted(search, "cv_results_")
    res = search.cv_results_
    names = [k[len("param_") :] for k in res if k.startswith("param_")]
    if params is None:
        params = [
            n
            for n in names
            if len({repr(v) for v in res[f"param_{n}"].compressed()}) > 1
        ] or names
    unknown = [p for p in params if p not in names]
    if unknown:
        raise ValueError(
            f"plot_schedules: {unknown} are not hyperparameters of this search; "
            f"it tuned {names}."
        )
    if axes is None:
        _, axes = plt.subplots(
            1, len(params), figsize=(4.2 * len(params), 3.4), squeeze=False
        )
    axes = np.asarray(axes, dtype=object).ravel()
    if len(axes) != len(params):
        raise ValueError(
            f"plot_schedules needs one axes per hyperparameter: {len(params)} "
            f"names but {len(axes)} axes."
        )
    best = lineage(res["parent"], int(search.best_index_))
    n_members = int(res["member"].max()) + 1
    colours = plt.get_cmap("tab10" if n_members <= 10 else "viridis")
    restarts = [
        int(res["start"][res["run"] == r].min())
        for r in sorted(set(res["run"].tolist()))
        if r > 0
    ]
    for ax, name in zip(axes, params):
        column = res[f"param_{name}"]
        present = ~np.ma.getmaskarray(column)
        values = [column[i] for i in range(len(column)) if present[i]]
        if _numeric(values):
            position = {i: float(column[i]) for i in np.flatnonzero(present)}
            positive = np.array(list(position.values()))
            if positive.min() > 0 and positive.max() / positive.min() > 100:
                ax.set_yscale("log")
        else:
            levels = list(dict.fromkeys(repr(v) for v in values))
            position = {
                i: float(levels.index(repr(column[i]))) for i in np.flatnonzero(present)
            }
            ax.set_yticks(range(len(levels)), levels)
        for i, y in position.items():
            member = int(res["member"][i])
            colour = colours(member % 10 if n_members <= 10 else member / n_members)
            ax.hlines(y, res["start"][i], res["stop"][i], color=colour, lw=1.2)
        xs, ys = [], []
        for i in best:
            if i in position:
                xs += [res["start"][i], res["stop"][i]]
                ys += [position[i], position[i]]
        ax.plot(xs, ys, color="black", lw=2.2, label="best member's lineage")
        for step in restarts:
            ax.axvline(step, color="grey", ls=":", lw=1)
        ax.set(xlabel="training steps per member", title=name)
    axes[0].legend(loc="best", fontsize="small")
    return axes

"""The statsmodels-style summary of a fitted TGINEE."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy import stats

__all__ = ["TGINEESummary", "coefficient_table"]

_COLUMNS = ("coef", "std err", "z", "P>|z|")


def coefficient_table(coef, bse, alpha=0.05):
    """Wald statistics of estimates and their (sandwich) standard errors.

    Parameters
    ----------
    coef, bse : ndarray of the same shape
        Estimates and their standard errors.
    alpha : float, default=0.05
        The intervals cover with probability ``1 - alpha``.

    Returns
    -------
    z, p, lower, upper : ndarray of the shape of ``coef``
        ``z = coef / bse`` (NaN where ``bse`` is 0), the two-sided normal
        p-value ``2 (1 - Phi(|z|))`` and the Wald interval ``coef -/+
        Phi^{-1}(1 - alpha / 2) bse``.
    """
    coef, bse = np.asarray(coef, dtype=float), np.asarray(bse, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(bse > 0, coef / bse, np.nan)
    p = 2 * stats.norm.sf(np.abs(z))
    q = stats.norm.ppf(1 - alpha / 2)
    return z, p, coef - q * bse, coef + q * bse


class TGINEESummary:
    """Coefficients with robust (sandwich) inference, per layer and covariate.

    What :meth:`TGINEE.summary <sklearn_ext.network.TGINEE.summary>`
    returns. ``str(summary)`` is a text table, ``summary._repr_html_()`` its
    HTML (a notebook shows it), ``summary.table`` the numbers: a pandas
    DataFrame indexed by (layer, term) when pandas is installed, else a
    dict of 1-D arrays. The tables are statsmodels' ``SimpleTable`` when
    statsmodels is installed (as its ``GEE`` summary prints them), a plain
    text table otherwise.

    Parameters
    ----------
    info : list of (str, str)
        The model's description, as (label, value) pairs.
    layers, terms : sequence of str
        The layer and term of each row.
    coef, bse : array-like of shape (n_rows,)
        Estimates and their robust standard errors.
    alpha : float
        The intervals cover with probability ``1 - alpha``.

    Attributes
    ----------
    info : list of (str, str)
        The model's description: link, working covariance, dyads, nodes,
        rank, dispersion, rounds.
    layers, terms : list of str
        The layer and term (covariate or "intercept") of each row.
    coef, bse, z, pvalues, lower, upper : ndarray of shape (n_rows,)
        Estimate, robust standard error, ``coef / bse``, two-sided p-value,
        and the ``1 - alpha`` Wald interval.
    alpha : float
    """

    def __init__(self, info, layers, terms, coef, bse, alpha):
        self.info = list(info)
        self.layers, self.terms = list(layers), list(terms)
        self.coef, self.bse = np.asarray(coef, float), np.asarray(bse, float)
        self.alpha = alpha
        self.z, self.pvalues, self.lower, self.upper = coefficient_table(
            self.coef, self.bse, alpha
        )

    @property
    def _interval_names(self):
        return f"[{self.alpha / 2:g}", f"{1 - self.alpha / 2:g}]"

    @property
    def table(self):
        """The rows as a DataFrame indexed by (layer, term), or a dict of arrays."""
        lo, hi = self._interval_names
        columns = {
            "coef": self.coef,
            "std err": self.bse,
            "z": self.z,
            "P>|z|": self.pvalues,
            lo: self.lower,
            hi: self.upper,
        }
        try:
            import pandas as pd
        except ImportError:
            return {
                "layer": np.array(self.layers),
                "term": np.array(self.terms),
                **columns,
            }
        index = pd.MultiIndex.from_arrays(
            [self.layers, self.terms], names=["layer", "term"]
        )
        return pd.DataFrame(columns, index=index)

    def _cells(self):
        return [
            [
                f"{c:.4f}",
                f"{s:.3f}",
                f"{z:.3f}",
                f"{p:.3f}",
                f"{lo:.3f}",
                f"{hi:.3f}",
            ]
            for c, s, z, p, lo, hi in zip(
                self.coef, self.bse, self.z, self.pvalues, self.lower, self.upper
            )
        ]

    def _statsmodels(self):
        """statsmodels' Summary of the two tables, or None without statsmodels."""
        try:
            from statsmodels.iolib.summary import Summary
            from statsmodels.iolib.table import SimpleTable
        except ImportError:
            return None
        summary = Summary()
        half = (len(self.info) + 1) // 2
        left, right = self.info[:half], self.info[half:]
        right = right + [("", "")] * (half - len(right))
        rows = [[a, b, c, d] for (a, b), (c, d) in zip(left, right)]
        summary.tables.append(SimpleTable(rows, title="TGINEE Regression Results"))
        lo, hi = self._interval_names
        stubs = [f"{layer}: {term}" for layer, term in zip(self.layers, self.terms)]
        summary.tables.append(
            SimpleTable(self._cells(), headers=[*_COLUMNS, lo, hi], stubs=stubs)
        )
        summary.add_extra_txt(
            ["Standard errors are robust (sandwich), each dyad a cluster."]
        )
        return summary

    def as_text(self):
        """Render the summary as plain text.

        Returns
        -------
        text : str
            The statsmodels rendering when statsmodels is installed, else a plain
            table.
        """
        summary = self._statsmodels()
        if summary is not None:
            return summary.as_text()
        lo, hi = self._interval_names
        stubs = [f"{layer}: {term}" for layer, term in zip(self.layers, self.terms)]
        header = ["", *_COLUMNS, lo, hi]
        body = [[stub, *cells] for stub, cells in zip(stubs, self._cells())]
        widths = [max(len(r[k]) for r in [header, *body]) for k in range(len(header))]

        def line(row):
            return "  ".join(
                cell.ljust(w) if k == 0 else cell.rjust(w)
                for k, (cell, w) in enumerate(zip(row, widths))
            )

        rule = "=" * len(line(header))
        info = [f"{key:<22}{value}" for key, value in self.info]
        return "\n".join(
            [
                "TGINEE Regression Results",
                rule,
                *info,
                rule,
                line(header),
                "-" * len(rule),
                *map(line, body),
                rule,
                "Standard errors are robust (sandwich), each dyad a cluster.",
            ]
        )

    def as_html(self):
        """Render the summary as HTML.

        Returns
        -------
        html : str
            The statsmodels HTML tables, or the plain text in a ``<pre>`` block.
        """
        summary = self._statsmodels()
        if summary is not None:
            return summary.as_html()
        import html

        return "<pre>" + html.escape(self.as_text()) + "</pre>"

    def __str__(self):
        return self.as_text()

    def __repr__(self):
        return self.as_text()

    def _repr_html_(self):
        return self.as_html()

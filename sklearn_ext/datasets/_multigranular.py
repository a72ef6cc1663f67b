"""Generated images with noisy text descriptions at several granularities."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, validate_params

__all__ = ["make_multigranular"]


def _level_groups(n_superclasses, n_subclasses, n_granularities):
    """Group of every fine class at every granularity (coarse to fine).

    Granularity ``g`` splits each superclass into
    ``m_g = 1 + round((n_subclasses - 1) * g / (n_granularities - 1))``
    consecutive groups of its subclasses: ``m_0 = 1`` (the superclass itself),
    the finest level one group per class. Groups are numbered globally.
    """
    n_classes = n_superclasses * n_subclasses
    groups = np.empty((n_granularities, n_classes), dtype=np.int64)
    for g in range(n_granularities):
        frac = g / (n_granularities - 1) if n_granularities > 1 else 1.0
        m = 1 + int(round((n_subclasses - 1) * frac))
        for c in range(n_classes):
            s, j = divmod(c, n_subclasses)
            groups[g, c] = s * m + (j * m) // n_subclasses
    return groups


@validate_params(
    {
        "n_samples": [Interval(Integral, 2, None, closed="left")],
        "n_superclasses": [Interval(Integral, 1, None, closed="left")],
        "n_subclasses": [Interval(Integral, 1, None, closed="left")],
        "n_granularities": [Interval(Integral, 1, None, closed="left")],
        "image_dim": [Interval(Integral, 1, None, closed="left")],
        "text_dim": [Interval(Integral, 1, None, closed="left")],
        "n_irrelevant": [Interval(Integral, 0, None, closed="left")],
        "image_noise": [Interval(Real, 0, None, closed="left")],
        "text_noise": [Interval(Real, 0, None, closed="left")],
        "description_noise": [Interval(Real, 0, 1, closed="both"), "array-like"],
        "return_details": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_multigranular(
    n_samples=900,
    *,
    n_superclasses=3,
    n_subclasses=3,
    n_granularities=3,
    image_dim=48,
    text_dim=24,
    n_irrelevant=24,
    image_noise=0.6,
    text_noise=1.0,
    description_noise=0.2,
    return_details=False,
    random_state=None,
):
    r"""Generate image embeddings with text embeddings at several granularities.

    A synthetic stand-in for language-informed image clustering: every sample
    is an "image" of one of ``n_superclasses * n_subclasses`` fine classes,
    nested in superclasses, described in text at ``n_granularities`` levels of
    detail, coarse to fine, by a describer that sometimes gets it wrong. No
    view is a noise-free copy of the labels.

    **Classes.** Fine class ``c`` belongs to superclass
    ``c // n_subclasses``; classes are balanced (``y`` is a random permutation
    of a balanced assignment). Granularity ``g`` (0 = coarse) tells the
    classes apart only up to groups: it splits each superclass into
    :math:`m_g = 1 + \operatorname{round}((n_{sub} - 1)\, g / (G - 1))`
    groups of consecutive subclasses, so the coarsest level names the
    superclass and the finest the class.

    **Image view** (``image_dim`` columns). A 12-dimensional semantic latent
    :math:`z = s_{super} + 0.6\, o_{c} + \text{image\_noise}\cdot\varepsilon`
    (superclass centres :math:`s` and within-superclass offsets :math:`o` drawn
    from :math:`N(0, I)` and scaled so that the superclass centres are 3 apart
    on average and the offsets of siblings 1.8 apart) and an 8-dimensional
    nuisance latent (pose, background: :math:`N(0, I)`, independent of the
    class) are mixed by a random linear map and a mild ``tanh``
    nonlinearity (:math:`x = u + 0.5 \tanh u` for the mixed :math:`u`), plus
    :math:`N(0, 0.1^2)` pixel noise. The nuisance carries about as much
    variance as the semantics, which is what misleads k-means on the image
    alone (its ACC at the defaults: :claim:`magic_gen.kmeans_image_acc`,
    ``benchmarks/bench_magic.py``).

    **Text views** (one per granularity, ``text_dim + n_irrelevant`` columns
    each). At each granularity, independently, the describer names the true
    class with probability ``1 - eta_g`` and otherwise a wrong one (a sibling
    in the same superclass with probability 0.7, any other class otherwise),
    with :math:`\eta_g = \text{description\_noise}\,(g + 1) / G`: finer
    descriptions are wrong more often, and a sibling confusion leaves the
    coarse description right. The description's embedding is its group's
    centre at that granularity plus :math:`N(0, \text{text\_noise}^2 I)`;
    centres are nested (a group's centre is its parent's plus a smaller
    offset), as the embeddings of "a cat" and "a tabby cat" are close. Then
    ``n_irrelevant`` columns of task-irrelevant content (style words,
    :math:`N(0, 1)` independent of everything) are appended: the redundancy
    an adapter should compress away.

    Parameters
    ----------
    n_samples : int, default=900
        Number of samples.
    n_superclasses : int, default=3
        Number of superclasses.
    n_subclasses : int, default=3
        Fine classes per superclass; ``y`` has
        ``n_superclasses * n_subclasses`` classes.
    n_granularities : int, default=3
        Number of text views, coarse to fine.
    image_dim : int, default=48
        Columns of the image view.
    text_dim : int, default=24
        Semantic columns of each text view.
    n_irrelevant : int, default=24
        Task-irrelevant columns appended to each text view.
    image_noise : float, default=0.6
        Within-class standard deviation of the image's semantic latent.
    text_noise : float, default=1.0
        Standard deviation of the noise on a description's embedding.
    description_noise : float in [0, 1] or array-like of shape (n_granularities,), \
            default=0.2
        A float: the mislabeling rate of the finest descriptions; granularity
        ``g`` is mislabeled at ``description_noise * (g + 1) / n_granularities``.
        An array: each granularity's own describer and its own mislabeling
        rate, coarse to fine (e.g. ``(0.1, 0.2, 0.45)``: a fine describer
        often wrong, coarse ones mostly right). Either way the errors of the
        granularities are drawn independently, so that a coarse description
        is often right where the fine one is wrong.
    return_details : bool, default=False
        If True, also return a dict of the hidden structure.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of every random draw.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The image view, then the text views from coarse to fine:
        ``image_dim + n_granularities * (text_dim + n_irrelevant)`` columns.
    y : ndarray of shape (n_samples,)
        Fine class labels.
    views : list of int
        The view sizes, ready for an estimator's ``views`` parameter.
    details : dict
        Only returned if ``return_details`` is True. ``"superclass"``: ndarray
        of shape (n_samples,); ``"described"``: ndarray of shape
        (n_samples, n_granularities), the class each description names;
        ``"mislabeled"``: boolean ndarray of that shape;
        ``"groups"``: ndarray of shape (n_granularities, n_classes), each
        class's group at each granularity.

    See Also
    --------
    sklearn_ext.cluster.MAGICClustering : Clusters such data.
    load_described_digits : Real images with descriptions from a noisy describer.

    Examples
    --------
    >>> from sklearn_ext.datasets import make_multigranular
    >>> X, y, views = make_multigranular(300, random_state=0)
    >>> X.shape, views
    ((300, 192), [48, 48, 48, 48])
    >>> X, y, views, details = make_multigranular(
    ...     3000, description_noise=0.3, return_details=True, random_state=0)
    >>> details["mislabeled"].mean(axis=0).round(2)
    array([0.1, 0.2, 0.3])
    """
    G = n_granularities
    if np.ndim(description_noise) == 0:
        rates = [description_noise * (g + 1) / G for g in range(G)]
    else:
        rates = np.asarray(description_noise, dtype=np.float64)
        if rates.shape != (G,):
            raise ValueError(
                f"description_noise has {rates.size} rate(s) but there are "
                f"n_granularities={G} granularities: give one rate per "
                "granularity (coarse to fine) or a single float."
            )
        if not np.all((rates >= 0) & (rates <= 1)):
            raise ValueError(
                f"description_noise rates must lie in [0, 1]; got {rates.tolist()}."
            )
        rates = rates.tolist()
    rng = check_random_state(random_state)
    n_classes = n_superclasses * n_subclasses
    y = rng.permutation(np.arange(n_samples) % n_classes)
    superclass = y // n_subclasses

    # image: semantic latent (nested centres) + nuisance, mixed nonlinearly
    sem_dim, nuis_dim = 12, 8
    supers = rng.standard_normal((n_superclasses, sem_dim)) * (
        3.0 / np.sqrt(2 * sem_dim)
    )
    offsets = rng.standard_normal((n_classes, sem_dim)) * (1.8 / np.sqrt(2 * sem_dim))
    centres = supers[np.arange(n_classes) // n_subclasses] + offsets
    z = centres[y] + image_noise * rng.standard_normal((n_samples, sem_dim))
    nuisance = 1.0 * rng.standard_normal((n_samples, nuis_dim))
    latent = np.hstack([z, nuisance])
    mixing = rng.standard_normal((sem_dim + nuis_dim, image_dim))
    mixing /= np.sqrt(sem_dim + nuis_dim)
    pre = latent @ mixing
    image = pre + 0.5 * np.tanh(pre) + 0.1 * rng.standard_normal(pre.shape)

    # text: nested group centres, mislabeled descriptions, irrelevant columns
    groups = _level_groups(n_superclasses, n_subclasses, G)
    described = np.empty((n_samples, G), dtype=np.int64)
    text_views = []
    parent_centres = None
    for g in range(G):
        eta = rates[g]
        wrong = rng.random_sample(n_samples) < eta
        named = y.copy()
        for i in np.flatnonzero(wrong):
            s = superclass[i]
            siblings = [
                c for c in range(s * n_subclasses, (s + 1) * n_subclasses) if c != y[i]
            ]
            others = [c for c in range(n_classes) if c != y[i]]
            pool = siblings if siblings and rng.random_sample() < 0.7 else others
            named[i] = pool[rng.randint(len(pool))] if pool else y[i]
        described[:, g] = named
        n_groups = groups[g].max() + 1
        # a group's parent is the coarser group of any of its classes
        fresh = rng.standard_normal((n_groups, text_dim)) / np.sqrt(text_dim)
        if parent_centres is None:
            group_centres = 3.0 * fresh
        else:
            parent_of = np.empty(n_groups, dtype=np.int64)
            parent_of[groups[g]] = groups[g - 1]
            group_centres = parent_centres[parent_of] + 2.0 * fresh
        parent_centres = group_centres
        semantic = group_centres[groups[g][named]]
        semantic = semantic + text_noise * rng.standard_normal(semantic.shape)
        style = rng.standard_normal((n_samples, n_irrelevant))
        text_views.append(np.hstack([semantic, style]))
    X = np.hstack([image, *text_views])
    views = [image_dim] + [text_dim + n_irrelevant] * G
    if not return_details:
        return X, y, views
    details = {
        "superclass": superclass,
        "described": described,
        "mislabeled": described != y[:, None],
        "groups": groups,
    }
    return X, y, views, details

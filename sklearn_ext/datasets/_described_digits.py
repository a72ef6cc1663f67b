"""Handwritten digits described at three granularities by an imperfect describer."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import NearestCentroid
from sklearn.utils import Bunch, check_random_state

from sklearn_ext.utils._sklearn_compat import Interval, validate_params

__all__ = ["load_described_digits"]

# Each level: the groups of digits it tells apart, with the key phrase of each,
# and the frames (phrasings) a key is written in. The key comes first or makes
# up most of the sentence, so that the content, not the phrasing, dominates a
# sentence embedding.
# Coarse level: three shape families.
_COARSE = (
    ((0, 6, 8, 9), "a rounded figure with a closed loop"),
    ((1, 4, 7), "a figure drawn with straight strokes"),
    ((2, 3, 5), "a figure made of open curves"),
)
_COARSE_FRAMES = ("{key}", "a sketch of {key}", "this looks like {key}")

# Medium level: seven shape groups, each inside one coarse family.
_MEDIUM = (
    ((0,), "a single closed oval"),
    ((8,), "two closed loops stacked on top of each other"),
    ((6, 9), "a single loop with a tail"),
    ((1, 7), "one long slanted stroke"),
    ((4,), "crossing strokes with a corner"),
    ((2, 5), "a curve with a flat stroke"),
    ((3,), "two stacked open bumps"),
)
_MEDIUM_FRAMES = (
    "{key}",
    "a shape like {key}",
    "a sketch showing {key}",
    "a handwritten mark: {key}",
)

# Fine level: the digit by name.
_NAMES = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
)
_FINE_FRAMES = (
    "{name} ({numeral}): the handwritten digit {name}",
    "{name} ({numeral}): a scanned number {name}",
    "{name} ({numeral}): a hand-drawn {name}",
    "{name} ({numeral}): an image of the numeral {name}",
)

# Task-irrelevant style phrases, one drawn per description ("" for none).
_STYLES = (
    "",
    ", on a dark background",
    ", drawn with a thick pen",
    ", slightly blurred",
)

_GRANULARITIES = ("coarse", "medium", "fine")


def _phrasings():
    """For each level, the tuple of phrasings of each digit 0..9."""
    coarse = {
        d: tuple(f.format(key=key) for f in _COARSE_FRAMES)
        for digits, key in _COARSE
        for d in digits
    }
    medium = {
        d: tuple(f.format(key=key) for f in _MEDIUM_FRAMES)
        for digits, key in _MEDIUM
        for d in digits
    }
    fine = {
        d: tuple(f.format(name=_NAMES[d], numeral=d) for f in _FINE_FRAMES)
        for d in range(10)
    }
    return [[level[d] for d in range(10)] for level in (coarse, medium, fine)]


def _downsample(images):
    """8x8 images (flattened) to 4x4 by averaging 2x2 blocks of pixels."""
    return images.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(-1, 16)


def _describe(small, target, description_noise, rng):
    """Describe digit images through a cross-fitted weak recogniser.

    ``small`` holds the features the recogniser sees (a coarse version of
    the images). Returns the three lists of descriptions (coarse, medium,
    fine), the describer's guesses and the recogniser's accuracy before the
    hallucinations.
    """
    n_samples = target.shape[0]
    # 1. Cross-fitted weak recogniser.
    folds = StratifiedKFold(
        n_splits=2, shuffle=True, random_state=rng.randint(np.iinfo(np.int32).max)
    )
    recognised = np.empty(n_samples, dtype=np.int64)
    for train, test in folds.split(small, target):
        recogniser = NearestCentroid().fit(small[train], target[train])
        recognised[test] = recogniser.predict(small[test])
    recogniser_accuracy = float(np.mean(recognised == target))

    # 2. Hallucinations: a uniform wrong digit with probability description_noise.
    hallucinate = rng.random_sample(n_samples) < description_noise
    wrong = (target + rng.randint(1, 10, size=n_samples)) % 10
    guess = np.where(hallucinate, wrong, recognised)

    # 3. Three descriptions per image, all from the guess.
    phrase_draws = rng.random_sample((len(_GRANULARITIES), n_samples))
    style_draws = rng.randint(len(_STYLES), size=(len(_GRANULARITIES), n_samples))
    descriptions = []
    for level, by_digit in enumerate(_phrasings()):
        texts = []
        for i, g in enumerate(guess):
            options = by_digit[g]
            phrase = options[int(phrase_draws[level, i] * len(options))]
            texts.append(f"{phrase}{_STYLES[style_draws[level, i]]}.")
        descriptions.append(texts)
    return descriptions, guess, recogniser_accuracy


@validate_params(
    {
        "description_noise": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def load_described_digits(*, description_noise=0.2, random_state=None):
    """Load the digits images, each described in text at three granularities.

    A real-image benchmark for language-informed image clustering where no
    vision-language model is at hand: the 1,797 8x8 handwritten digits of
    :func:`sklearn.datasets.load_digits`, each given three descriptions, coarse
    to fine, by a deliberately imperfect describer that stands in for a
    vision-language model. The descriptions are never a noise-free copy of the
    labels: they are written from the describer's guess, which is wrong for
    about one image in five even with ``description_noise=0``.

    The describer works in three steps.

    1. A weak recogniser, cross-fitted so that no image is described by a model
       trained on it: the images are split into 2 stratified folds (shuffled
       with ``random_state``); for each fold, a
       :class:`~sklearn.neighbors.NearestCentroid` is fitted on the other
       fold's images downsampled to 4x4 (the mean of each 2x2 block of pixels,
       16 features) and predicts this fold. Its accuracy is
       :claim:`magic_noise.describer_0` (``benchmarks/bench_magic.py``), with
       the confusions of a real recogniser (a 1 is often taken for an 8).
    2. Hallucination: independently for each image, with probability
       ``description_noise`` the guess is replaced by a digit drawn uniformly
       from the nine digits other than the true one. The describer's expected
       accuracy is thus ``(1 - description_noise)`` times the recogniser's,
       and 0 at ``description_noise=1``.
    3. The three descriptions are all written from this one, possibly wrong,
       guess, so that the errors agree across granularities:

       - coarse, the shape family: "a rounded figure with a closed loop"
         {0, 6, 8, 9}, "a figure drawn with straight strokes" {1, 4, 7} or
         "a figure made of open curves" {2, 3, 5};
       - medium, a finer shape group within the family: "a single closed
         oval" {0}, "two closed loops stacked on top of each other" {8}, "a
         single loop with a tail" {6, 9}, "one long slanted stroke" {1, 7},
         "crossing strokes with a corner" {4}, "a curve with a flat stroke"
         {2, 5} or "two stacked open bumps" {3};
       - fine, the digit by name and numeral ("seven (7): the handwritten
         digit seven").

       The phrase is set in a frame drawn uniformly per description (3 frames
       at the coarse level, such as "this looks like ...", 4 at the medium
       and fine levels, such as "a sketch showing ..." and "... a scanned
       number seven"), and each description ends with a style phrase drawn
       uniformly from ", on a dark background", ", drawn with a thick pen",
       ", slightly blurred" and none: redundancy that says nothing about the
       digit. There are at most 308 distinct descriptions (36 coarse, 112
       medium, 160 fine), so that :func:`~sklearn_ext.datasets.encode_texts`
       embeds them all in a few forward passes.

    ======================  ======================
    Samples                 1,797
    Pixel features          64 (0..16)
    Classes                 10
    Granularities           3 (coarse to fine)
    Distinct descriptions   at most 308
    Describer accuracy      :claim:`magic_noise.describer_0` at noise 0
    ======================  ======================

    Parameters
    ----------
    description_noise : float in [0, 1], default=0.2
        Probability that the describer replaces its guess by a wrong digit.
    random_state : int, RandomState instance or None, default=None
        Seed or generator of the folds, the hallucinations and the choice of
        phrasings; the same seed gives the same descriptions.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes below.

        images : ndarray of shape (1797, 64), float64
            The pixel values (0..16) as :func:`~sklearn.datasets.load_digits`
            gives them, one flattened 8x8 image per row.
        descriptions : list of 3 lists of str
            ``descriptions[level][i]`` describes image ``i``; the levels are
            ordered coarse, medium, fine.
        granularities : list of str
            ``["coarse", "medium", "fine"]``.
        target : ndarray of shape (1797,), int64
            The true digit of each image.
        guess : ndarray of shape (1797,), int64
            The describer's guess of the digit, the one its descriptions
            follow.
        describer_accuracy : float
            ``mean(guess == target)``.
        DESCR : str
            How the descriptions are made and how noisy they are.

    Notes
    -----
    The random draws are made in a fixed order (fold split, hallucinations
    for all images, phrasings for all images), so that two calls with the same
    seed and different ``description_noise`` hallucinate on nested sets of
    images and choose the same frames and style phrases.

    The phrases are written so that their content, not the frame or the style,
    dominates a sentence embedding: embedded with
    :func:`~sklearn_ext.datasets.encode_texts`, the descriptions of each level
    fall, under k-means, into the groups of that level as the guesses make
    them (adjusted Rand index about 1 at the coarse and fine levels, 0.7 to
    1 at the medium level). What separates the descriptions from the truth is
    the describer's errors.

    Examples
    --------
    >>> from sklearn_ext.datasets import load_described_digits
    >>> data = load_described_digits(random_state=0)
    >>> data.images.shape, len(data.descriptions), len(data.descriptions[2])
    ((1797, 64), 3, 1797)
    >>> round(data.describer_accuracy, 3)
    0.642
    >>> int(data.target[2]), int(data.guess[2])
    (2, 1)
    >>> for level in data.descriptions:
    ...     print(level[2])
    a sketch of a figure drawn with straight strokes.
    a shape like one long slanted stroke, drawn with a thick pen.
    one (1): an image of the numeral one, on a dark background.
    """
    digits = load_digits()
    images = np.asarray(digits.data, dtype=np.float64)
    target = np.asarray(digits.target, dtype=np.int64)
    rng = check_random_state(random_state)

    descriptions, guess, recogniser_accuracy = _describe(
        _downsample(images), target, description_noise, rng
    )
    describer_accuracy = float(np.mean(guess == target))

    descr = (
        "Handwritten digits (scikit-learn's load_digits: 1,797 8x8 images, 10 "
        "classes) described at three granularities (coarse shape family, "
        "medium shape group, fine digit name) by a simulated, imperfect "
        "describer. Its guess comes from a NearestCentroid recogniser on "
        "4x4-downsampled images, cross-fitted on 2 stratified folds (each fold "
        "predicted by the model fitted on the other; accuracy "
        f"{recogniser_accuracy:.3f} here); then, with probability "
        f"{description_noise:g} per image, the guess is replaced by a uniformly "
        "drawn wrong digit. All three descriptions follow this one guess, with "
        "a phrasing drawn from 3 or 4 per group and an irrelevant style phrase "
        "(or none). The describer's accuracy (guess == target) is "
        f"{describer_accuracy:.3f}; the descriptions are never a noise-free "
        "copy of the labels."
    )
    return Bunch(
        images=images,
        descriptions=descriptions,
        granularities=list(_GRANULARITIES),
        target=target,
        guess=guess,
        describer_accuracy=describer_accuracy,
        DESCR=descr,
    )

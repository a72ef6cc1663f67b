"""The shifted-digits task of the Theseus demo, benchmark and tests."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import copy

import numpy as np
from scipy.ndimage import rotate
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

__all__ = ["digits_transfer_task", "fine_tune", "shift_digits"]


def shift_digits(X, shift, random_state=0):
    """Digits (rows of 8x8 images) under a domain shift.

    ``shift`` is ``"rotate<degrees>"`` (bilinear rotation about the centre)
    or ``"noise<sd>"`` (additive Gaussian noise of that standard deviation,
    pixels range over 0-16).
    """
    if shift.startswith("rotate"):
        angle = float(shift[len("rotate") :])
        images = np.asarray(X, dtype=np.float64).reshape(-1, 8, 8)
        out = rotate(images, angle, axes=(1, 2), reshape=False, order=1)
        return out.reshape(len(images), 64)
    if shift.startswith("noise"):
        sd = float(shift[len("noise") :])
        rng = np.random.default_rng(random_state)
        return X + rng.normal(0.0, sd, np.shape(X))
    raise ValueError(f"unknown shift {shift!r}; use 'rotate<deg>' or 'noise<sd>'.")


def digits_transfer_task(seed, shift="rotate30"):
    """Clean and shifted digits, split into train (50%), validation and test.

    Returns a dict with ``X_train, y_train`` (clean), ``S_train, S_val,
    S_test`` (shifted), ``X_test`` (clean) and ``y_val, y_test``.
    """
    X, y = load_digits(return_X_y=True)
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.5, random_state=seed, stratify=y
    )
    X_val, X_test, y_val, y_test = train_test_split(
        X_rest, y_rest, test_size=0.6, random_state=seed, stratify=y_rest
    )
    return {
        "X_train": X_train,
        "y_train": y_train,
        "X_test": X_test,
        "y_val": y_val,
        "y_test": y_test,
        "S_train": shift_digits(X_train, shift, seed),
        "S_val": shift_digits(X_val, shift, seed + 1),
        "S_test": shift_digits(X_test, shift, seed + 2),
    }


def fine_tune(model, X, y, max_iter=50):
    """A copy of a fitted UnlearnableMLPClassifier trained further on (X, y)."""
    return (
        copy.deepcopy(model)
        .set_params(warm_start=True, max_iter=max_iter, learning_rate_init=1e-3)
        .fit(X, y)
    )

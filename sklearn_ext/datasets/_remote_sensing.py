"""A generated two-sensor remote-sensing scene with a known land-cover map."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils import Bunch, check_random_state

__all__ = ["make_remote_sensing_scene"]

# Land-cover classes: (name, spectral group, height above the terrain). Pairs
# share a spectrum and differ in height (grass / tree, road / roof), or share
# a height and differ in spectrum (grass / road / water), so that neither
# sensor alone tells every class apart.
_CLASSES = (
    ("water", 0, 0.0),
    ("grass", 1, 0.0),
    ("tree", 1, 1.0),
    ("road", 2, 0.0),
    ("roof", 2, 1.0),
    ("soil", 3, 0.5),
)


def make_remote_sensing_scene(
    shape=(128, 128),
    *,
    n_bands=32,
    n_regions=60,
    spectral_noise=0.15,
    elevation_noise=0.1,
    terrain=0.3,
    random_state=None,
):
    """Generate a hyperspectral + elevation scene of six land-cover classes.

    The map is a Voronoi partition of the image into ``n_regions`` regions,
    each of one of six classes (water, grass, tree, road, roof, soil; each
    class gets at least one region). The **spectral** view has ``n_bands``
    bands: every pixel is a mixture of four smooth endmember spectra with
    abundances drawn around its class's (Dirichlet, per pixel) plus Gaussian
    noise. The **elevation** view (one band, as a LiDAR-derived surface
    model) is the class's height above a smooth terrain plus noise. The two
    are complementary by construction: grass and tree (and road and roof)
    share a spectrum and differ in height; water, grass and road share a
    height and differ in spectrum; so every class is told apart only by both
    views together.

    Parameters
    ----------
    shape : tuple of int, default=(128, 128)
        Height and width in pixels.
    n_bands : int, default=32
        Bands of the spectral view.
    n_regions : int, default=60
        Voronoi regions of the land-cover map (at least 6).
    spectral_noise : float, default=0.15
        Standard deviation of the per-band noise (the spectra lie in [0, 1]).
    elevation_noise : float, default=0.1
        Standard deviation of the elevation noise (heights are 0, 0.5, 1).
    terrain : float, default=0.3
        Amplitude of the smooth terrain under the objects.
    random_state : int, RandomState instance or None, default=None
        Seeds the map, the spectra, the abundances, the terrain and the
        noise.

    Returns
    -------
    scene : Bunch
        ``spectral`` (H, W, n_bands), ``elevation`` (H, W, 1), ``land_cover``
        (H, W) int class map, ``class_names`` and ``endmembers``
        (4, n_bands).

    Examples
    --------
    >>> from sklearn_ext.datasets import make_remote_sensing_scene
    >>> scene = make_remote_sensing_scene((32, 32), n_bands=8, random_state=0)
    >>> scene.spectral.shape, scene.elevation.shape, scene.land_cover.shape
    ((32, 32, 8), (32, 32, 1), (32, 32))
    """
    height, width = (int(s) for s in shape)
    if height < 2 or width < 2:
        raise ValueError(f"shape must be at least (2, 2); got {shape!r}.")
    if n_regions < len(_CLASSES):
        raise ValueError(
            f"n_regions={n_regions}: at least {len(_CLASSES)} regions are "
            "needed, one per class."
        )
    if n_bands < 1:
        raise ValueError(f"n_bands must be positive; got {n_bands}.")
    rng = check_random_state(random_state)
    n_classes = len(_CLASSES)

    seeds = rng.uniform(0, 1, size=(n_regions, 2)) * [height, width]
    region_class = np.concatenate(
        [np.arange(n_classes), rng.randint(n_classes, size=n_regions - n_classes)]
    )
    rows, cols = np.mgrid[0:height, 0:width]
    pixels = np.column_stack([rows.ravel(), cols.ravel()]).astype(float)
    nearest = np.empty(pixels.shape[0], dtype=np.int64)
    for start in range(0, pixels.shape[0], 8192):
        block = pixels[start : start + 8192]
        d2 = ((block[:, None, :] - seeds[None, :, :]) ** 2).sum(axis=2)
        nearest[start : start + 8192] = d2.argmin(axis=1)
    land_cover = region_class[nearest].reshape(height, width)

    # Four smooth endmembers (sums of Gaussian bumps over the bands).
    bands = np.linspace(0, 1, n_bands)
    centres = rng.uniform(0, 1, size=(4, 3))
    endmembers = np.stack(
        [
            0.2 + 0.6 * np.exp(-((bands[:, None] - c[None, :]) ** 2) / 0.02).max(1)
            for c in centres
        ]
    )
    group_abundance = np.eye(4) * 0.7 + 0.075
    labels = land_cover.ravel()
    groups = np.array([g for _, g, _ in _CLASSES])[labels]
    alpha = 20.0 * group_abundance[groups]
    abundance = np.stack([rng.dirichlet(a) for a in alpha])
    spectral = abundance @ endmembers
    spectral = spectral + rng.normal(0, spectral_noise, size=spectral.shape)

    u, v = rows / height, cols / width
    phase = rng.uniform(0, 2 * np.pi, size=2)
    ground = terrain * (np.sin(2 * np.pi * u + phase[0]) * np.cos(np.pi * v + phase[1]))
    heights = np.array([h for _, _, h in _CLASSES])[land_cover]
    elevation = ground + heights + rng.normal(0, elevation_noise, size=ground.shape)

    return Bunch(
        spectral=spectral.reshape(height, width, n_bands),
        elevation=elevation[:, :, None],
        land_cover=land_cover,
        class_names=[name for name, _, _ in _CLASSES],
        endmembers=endmembers,
    )

"""SuperpixelFeaturizer: a scikit-learn transformer of a scene's pixels."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_ext.cluster import SuperpixelFeaturizer
from sklearn_ext.cluster._superpixels import make_texture_scene
from sklearn_ext.datasets import make_remote_sensing_scene
from sklearn_ext.utils import clustering_accuracy

pytest.importorskip("skimage")


@pytest.fixture(scope="module")
def scene():
    return make_remote_sensing_scene((64, 64), n_bands=8, n_regions=20, random_state=0)


@pytest.fixture(scope="module")
def pixels(scene):
    return SuperpixelFeaturizer.stack_views([scene.spectral, scene.elevation])


def test_superpixels_are_pure_and_paint_back(scene, pixels):
    X, shape, views = pixels
    assert X.shape == (64 * 64, 9) and shape == (64, 64) and views == [8, 1]
    sp = SuperpixelFeaturizer(n_segments=150, image_shape=shape, views=views)
    P = sp.fit_transform(X)
    F = sp.superpixel_features_
    assert P.shape == (X.shape[0], 9) and F.shape == (sp.n_superpixels_, 9)
    assert sp.view_sizes_ == [8, 1]
    # Every pixel carries its superpixel's row, and transform agrees.
    np.testing.assert_array_equal(P, F[sp.segments_.ravel()])
    np.testing.assert_allclose(sp.transform(X), P)
    y = scene.land_cover.ravel()
    seg = sp.segments_.ravel()
    purity = sum(np.bincount(y[seg == s]).max() for s in range(sp.n_superpixels_))
    assert purity / y.size > 0.95
    s0 = sp.segments_ == 0
    np.testing.assert_allclose(F[0, :8], scene.spectral[s0].mean(0))
    np.testing.assert_array_equal(sp.paint(np.arange(sp.n_superpixels_)), sp.segments_)
    assert sp.n_superpixels_ < y.size / 20
    full = SuperpixelFeaturizer(
        n_segments=150,
        image_shape=shape,
        views=views,
        features=("mean", "std", "gradient", "texture"),
    ).fit(X)
    assert full.view_sizes_ == [8 * 3 + 14, 3 + 14]
    names = full.get_feature_names_out()
    assert len(names) == 55 and names[0] == "mean_x0" and "lbp0_view1" in names


def test_superpixel_clustering_needs_both_views(scene, pixels):
    X, shape, views = pixels
    sp = SuperpixelFeaturizer(n_segments=150, image_shape=shape, views=views).fit(X)
    F = sp.superpixel_features_
    F = (F - F.mean(0)) / F.std(0)
    F[:, :8] /= np.sqrt(8)
    y = scene.land_cover.ravel()

    def acc(columns):
        km = KMeans(6, n_init=10, random_state=0)
        labels = km.fit_predict(F[:, columns], sample_weight=sp.pixel_counts_)
        return clustering_accuracy(y, sp.paint(labels).ravel())

    both, spectral, elevation = acc(slice(None)), acc(slice(0, 8)), acc(slice(8, 9))
    assert both > max(spectral, elevation) + 0.1


def test_clone_and_pipeline(pixels):
    X, shape, views = pixels
    sp = SuperpixelFeaturizer(80, compactness=0.5, image_shape=shape, views=views)
    twin = clone(sp)
    assert twin.get_params() == sp.get_params() and not hasattr(twin, "segments_")
    twin.set_params(n_segments=60)
    assert twin.n_segments == 60 and sp.n_segments == 80
    pipe = make_pipeline(sp, StandardScaler(), KMeans(6, n_init=3, random_state=0))
    labels = pipe.fit_predict(X)
    assert labels.shape == (X.shape[0],)
    # A pixel's label is its superpixel's: constant on every superpixel.
    seg = pipe[0].segments_.ravel()
    for s in range(pipe[0].n_superpixels_):
        assert np.unique(labels[seg == s]).size == 1
    # Same random_state, same floats; the input is not modified.
    X0 = X.copy()
    again = clone(pipe).fit_predict(X)
    np.testing.assert_array_equal(labels, again)
    np.testing.assert_array_equal(X, X0)


def test_texture_features_separate_equal_mean_textures():
    # Four textures of mean 0 and sd 1: the means and pixel values cannot
    # tell them apart; the LBP and orientation features do.
    accs = {"mean": [], "texture": [], "pixels": []}
    for seed in (0, 1):
        image, labels = make_texture_scene(64, random_state=seed)
        y, X = labels.ravel(), image.reshape(-1, 1)
        for key, features in (("mean", ("mean",)), ("texture", ("mean", "texture"))):
            pipe = make_pipeline(
                SuperpixelFeaturizer(
                    64, compactness=1.0, image_shape=image.shape, features=features
                ),
                StandardScaler(),
                KMeans(4, n_init=10, random_state=0),
            )
            accs[key].append(clustering_accuracy(y, pipe.fit_predict(X)))
        pixel = KMeans(4, n_init=10, random_state=0).fit_predict(X)
        accs["pixels"].append(clustering_accuracy(y, pixel))
    assert min(accs["texture"]) > 0.7
    assert min(accs["texture"]) > max(accs["mean"]) + 0.2
    assert min(accs["texture"]) > max(accs["pixels"]) + 0.3
    # The orientation statistics tell vertical from horizontal stripes,
    # which rotation-invariant LBP codes alone cannot.
    image, labels = make_texture_scene(64, random_state=0)
    sp = SuperpixelFeaturizer(
        64, compactness=1.0, image_shape=image.shape, features=("texture",)
    ).fit(image.reshape(-1, 1))
    names = list(sp.get_feature_names_out())
    cos2 = sp.transform(image.reshape(-1, 1))[:, names.index("orientation_cos_view0")]
    y = labels.ravel()
    assert np.median(cos2[y == 1]) > 0.5 > -0.5 > np.median(cos2[y == 2])


def test_superpixel_bad_input(scene, pixels):
    X, shape, views = pixels
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SuperpixelFeaturizer(50, image_shape=shape, views=views).fit(bad)
    with pytest.raises(ValueError, match="co-registered"):
        SuperpixelFeaturizer.stack_views([scene.spectral, scene.elevation[:10]])
    with pytest.raises(ValueError, match="at least one band"):
        SuperpixelFeaturizer.stack_views([scene.spectral, scene.spectral[:, :, :0]])
    with pytest.raises(ValueError, match="n_segments"):
        SuperpixelFeaturizer(0, image_shape=shape).fit(X)
    with pytest.raises(ValueError, match=r"image_shape=\(60, 64\) holds 3840 pixels"):
        SuperpixelFeaturizer(50, image_shape=(60, 64)).fit(X)
    with pytest.raises(ValueError, match="image_shape must be"):
        SuperpixelFeaturizer(50, image_shape=(64, 64, 1)).fit(X)
    with pytest.raises(ValueError, match=r"views=\[8, 2\] add up to 10 bands"):
        SuperpixelFeaturizer(50, image_shape=shape, views=[8, 2]).fit(X)
    n = X.shape[0]
    with pytest.raises(
        ValueError,
        match=rf"more superpixels than the scene has pixels \(64 x 64 = {n}\)"
        rf".*n_segments <= {n}",
    ):
        SuperpixelFeaturizer(n + 1, image_shape=shape).fit(X)
    with pytest.raises(ValueError, match="features must be"):
        SuperpixelFeaturizer(50, image_shape=shape, features=("median",)).fit(X)
    sp = SuperpixelFeaturizer(50, image_shape=shape, views=views).fit(X)
    with pytest.raises(ValueError, match="one row per superpixel"):
        sp.paint(np.zeros(sp.n_superpixels_ + 1))
    with pytest.raises(ValueError, match="fitted on a scene of"):
        sp.transform(X[:100])
    with pytest.raises(ValueError, match="features"):
        sp.transform(X[:, :8])
    with pytest.raises(Exception, match="not fitted"):
        SuperpixelFeaturizer(image_shape=shape).transform(X)


def test_a_scene_is_read_as_its_table(scene, pixels):
    X, shape, views = pixels
    table = SuperpixelFeaturizer(60, image_shape=shape, views=views).fit(X)
    image = SuperpixelFeaturizer(60).fit([scene.spectral, scene.elevation])
    np.testing.assert_array_equal(table.segments_, image.segments_)
    np.testing.assert_allclose(
        table.transform(X), image.transform([scene.spectral, scene.elevation])
    )
    with pytest.raises(ValueError, match="image_shape"):
        SuperpixelFeaturizer(60, image_shape=(32, 128)).fit([scene.spectral])

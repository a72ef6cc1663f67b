"""CrossQ: context-conditioned, ranking-aligned compression of token embeddings."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_array

import sklearn_ext.retrieval._crossq_solver as solver
from sklearn_ext.base import TorchDeviceMixin
from sklearn_ext.retrieval._base import check_groups, given_column
from sklearn_ext.utils._docstrings import fill_doc
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)
from sklearn_ext.utils._torch import import_torch, to_numpy, to_tensor
from sklearn_ext.utils._validation import column_index

__all__ = ["CrossQCompressor"]

# Tokens used to seed the codebooks by residual k-means (the joint least-squares
# rounds that follow use every token).
_INIT_SAMPLE = 10_000
# Pseudo-queries when fit gets no training queries: windows of this many
# consecutive tokens of this many documents.
_PSEUDO_QUERY_LEN = 8
_PSEUDO_QUERIES = 512


@fill_doc
class CrossQCompressor(TransformerMixin, TorchDeviceMixin, BaseEstimator):
    """Compress late-interaction token embeddings to a few bytes per token.

    Late-interaction retrievers (ColBERT) keep one vector per token and score
    a document by MaxSim: the sum over query tokens of their best dot product
    with the document's tokens. CrossQ stores each token as
    ``bytes_per_token`` one-byte codeword indices of a residual quantiser (the
    decoded token is the sum of the chosen codewords) and makes the codes
    serve the ranking rather than the reconstruction:

    * **context-conditioned codes and codebooks**: the code of a token
      minimises a score distortion ``e'(I + token_weight u u' +
      context_weight c c')e`` of its error ``e``, where ``u`` is the token's
      direction and ``c`` its document context (``context="mean"``: the
      document's mean token; ``"attention"``: a softmax-attention mean of the
      document's tokens around it), so errors along the directions that
      relevant query tokens share with the token and its document cost the
      most. The codebooks are fitted in the same metric: after a residual
      k-means start, each round encodes every token in its metric and solves
      the codebooks for the metric-weighted error (preconditioned conjugate
      gradients on the normal equations), and the refinement below keeps the
      metric-weighted error as its reconstruction term. The context is
      computed from the document's tokens when they are encoded and is **not
      stored**: :meth:`decode` reads the codes alone;
    * **ranking-aligned codebooks**: the codebooks are then refined by Adam on
      training queries so that the compressed MaxSim scores of each query's
      exact top candidates keep the exact score distribution and the exact
      top document keeps its margin over the hard negatives
      (``ranking_loss``); then the tokens are encoded again.

    ``context="none"`` with ``token_weight=0`` and ``ranking_loss=None`` is a
    plain learned residual quantiser (residual k-means, then rounds of beam
    encoding and a joint least-squares solve), the ablation that
    ``benchmarks/bench_crossq.py`` runs beside faiss's residual quantiser.

    Parameters
    ----------
    bytes_per_token : int, default=4
        Bytes of each token's code: one residual stage of 256 codewords per
        byte.
    group_column : int, str or None, default=0
        Column of X holding each token's document id (integers); the other
        columns are the token's embedding. scikit-learn calls
        :meth:`transform` with X alone, so the document travels in X, as
        ``task_column`` does for the graph-guided models. None: no id column,
        every row is its own document (no context beyond the token itself).
    context : {"mean", "attention", "none"}, default="mean"
        The document context that conditions the codes (see above); "none"
        drops the context term.
    ranking_loss : {"kl_margin", "kl", "margin"} or None, default="kl_margin"
        The ranking-aligned refinement of the codebooks: the KL divergence of
        the candidates' score distribution, the hard-negative margin hinge,
        both, or None (no refinement).
    token_weight : float, default=10.0
        Weight of the error along the token's own direction in the code
        choice (the largest MaxSim scores are those of query tokens close to
        the token). 0 gives the plain squared error.
    context_weight : float, default=10.0
        Weight of the error along the document context. Ignored when
        ``context="none"``.
    beam_width : int, default=4
        Partial codes kept per token between stages of the beam search.
    n_refit : int, default=1
        Rounds of (encode all tokens, solve the codebooks by joint least
        squares) after the residual k-means start.
    n_epochs : int, default=5
        Epochs of the ranking refinement over the training queries.
    n_candidates : int, default=16
        Exact top documents per training query that the ranking losses see.
    %(random_state)s
    %(device)s
    %(verbose)s

    Attributes
    ----------
    codebooks_ : ndarray of shape (bytes_per_token, 256, n_dims), float32
        The codewords of each stage.
    n_features_in_ : int
        Columns of X seen in fit (the id column included).
    n_dims_ : int
        Embedding dimension (``n_features_in_`` minus the id column).
    group_column_index_ : int or None
        Position of the document id column.
    ranking_loss_curve_ : list of float
        Mean loss of each refinement epoch (empty without refinement).
    device_ : str
        Device the fit ran on.

    See Also
    --------
    LateInteractionIndex : MaxSim search over compressed documents.

    Notes
    -----
    Stored per token: ``bytes_per_token`` bytes. Stored once: the codebooks
    (``bytes_per_token * 256 * n_dims`` float32). :meth:`index_bytes` counts
    both and the document offsets. Encoding is deterministic given the
    fitted codebooks, so ``fit_transform(X)`` equals ``fit(X).transform(X)``.
    Training queries come through ``fit(X, queries=...)``; without them the
    ranking losses use pseudo-queries, windows of 8 consecutive tokens of 512
    documents, whose exact top candidate is their own document.

    References
    ----------
    .. [1] "CrossQ: Task-Aligned Cross-Token Conditional Quantization for
       Late Interaction Retrieval", ICML 2026 (poster 62085).
    .. [2] O. Khattab and M. Zaharia, "ColBERT: Efficient and Effective
       Passage Search via Contextualized Late Interaction over BERT",
       SIGIR 2020.
    .. [3] R. Guo et al., "Accelerating Large-Scale Inference with
       Anisotropic Vector Quantization", ICML 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.retrieval import CrossQCompressor
    >>> rng = np.random.default_rng(0)
    >>> emb = rng.normal(size=(600, 16)).astype(np.float32)
    >>> emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    >>> X = np.column_stack([np.repeat(np.arange(30), 20), emb])
    >>> cq = CrossQCompressor(bytes_per_token=2, n_epochs=2, random_state=0)
    >>> codes = cq.fit(X).encode(X)
    >>> codes.shape, codes.dtype
    ((600, 2), dtype('uint8'))
    >>> cq.decode(codes).shape
    (600, 16)
    >>> cq.inverse_transform(cq.transform(X)).shape  # X's layout, ids included
    (600, 17)
    """

    _paper = (
        "CrossQ: Task-Aligned Cross-Token Conditional Quantization for Late "
        "Interaction Retrieval, ICML 2026"
    )
    _bench_name = "crossq"
    _no_sample_weight = (
        "the tokens of an index are not weighted samples: what weighs a token is "
        "how often queries pick it in MaxSim, which the ranking losses take from "
        "the training queries"
    )
    _module_attributes = ()

    _parameter_constraints: dict = {
        **TorchDeviceMixin._parameter_constraints,
        "bytes_per_token": [Interval(Integral, 1, 64, closed="both")],
        "group_column": [None, Integral, str],
        "context": [StrOptions({"mean", "attention", "none"})],
        "ranking_loss": [StrOptions({"kl_margin", "kl", "margin"}), None],
        "token_weight": [Interval(Real, 0, None, closed="left")],
        "context_weight": [Interval(Real, 0, None, closed="left")],
        "beam_width": [Interval(Integral, 1, 256, closed="both")],
        "n_refit": [Interval(Integral, 0, None, closed="left")],
        "n_epochs": [Interval(Integral, 0, None, closed="left")],
        "n_candidates": [Interval(Integral, 2, None, closed="left")],
    }

    def __init__(
        self,
        bytes_per_token=4,
        *,
        group_column=0,
        context="mean",
        ranking_loss="kl_margin",
        token_weight=10.0,
        context_weight=10.0,
        beam_width=4,
        n_refit=1,
        n_epochs=5,
        n_candidates=16,
        random_state=None,
        device="auto",
        verbose=0,
    ):
        self.bytes_per_token = bytes_per_token
        self.group_column = group_column
        self.context = context
        self.ranking_loss = ranking_loss
        self.token_weight = token_weight
        self.context_weight = context_weight
        self.beam_width = beam_width
        self.n_refit = n_refit
        self.n_epochs = n_epochs
        self.n_candidates = n_candidates
        self.random_state = random_state
        self.device = device
        self.verbose = verbose

    # --- input ------------------------------------------------------------------

    def _split(self, X, *, fitting):
        """(tokens float32, document ids int64) from X."""
        given = X
        if fitting:
            X = validate_data(
                self, X, dtype=[np.float64, np.float32], ensure_min_samples=2
            )
            if self.group_column is None:
                self.group_column_index_ = None
            else:
                self.group_column_index_ = column_index(
                    self, self.group_column, X.shape[1], param="group_column"
                )
                if X.shape[1] < 2:
                    raise ValueError(
                        "X has no embedding column besides the document id column "
                        "(group_column); it needs at least 2 columns."
                    )
        else:
            check_is_fitted(self)
            X = validate_data(self, X, dtype=[np.float64, np.float32], reset=False)
        c = self.group_column_index_
        if c is None:
            return X.astype(np.float32), np.arange(X.shape[0], dtype=np.int64)
        groups = check_groups(X[:, c], c, given=given_column(given, c))
        tokens = np.delete(X, c, axis=1).astype(np.float32)
        return tokens, groups

    def _prepare(self, tokens, groups, device):
        """Tokens sorted by document, with dense document indices and contexts."""
        torch = import_torch()
        order = np.argsort(groups, kind="stable")
        _, dense = np.unique(groups[order], return_inverse=True)
        T = to_tensor(tokens[order], dtype=torch.float32, device=device)
        g = torch.as_tensor(dense, dtype=torch.long, device=device)
        return order, T, g, int(dense.max()) + 1 if len(dense) else 0

    def _directions(self, T, g, n_groups):
        directions, weights = [], []
        if self.token_weight > 0:
            directions.append(torch_normalize(T))
            weights.append(float(self.token_weight))
        if self.context != "none" and self.context_weight > 0:
            directions.append(
                solver.document_context(T, g, n_groups, kind=self.context)
            )
            weights.append(float(self.context_weight))
        return directions, weights

    def _encode(self, T, g, n_groups, codebooks, directions=None, weights=None):
        if directions is None:
            directions, weights = self._directions(T, g, n_groups)
        return solver.beam_encode(
            T,
            codebooks,
            directions=directions,
            weights=weights,
            beam=self.beam_width,
        )

    def _training_queries(self, queries, T, g, n_groups, generator):
        """(query tokens, dense query index, n_queries) for the ranking losses."""
        torch = import_torch()
        if queries is not None:
            given = queries
            Q = check_array(
                queries, dtype=[np.float64, np.float32], input_name="queries"
            )
            if Q.shape[1] != self.n_dims_ + 1:
                raise ValueError(
                    "queries must have the query id in column 0 and the "
                    f"{self.n_dims_} embedding dimensions after it "
                    f"({self.n_dims_ + 1} columns); got {Q.shape[1]} columns."
                )
            qid = check_groups(
                Q[:, 0],
                0,
                given=given_column(given, 0),
                name="queries",
                kind="query",
            )
            order = np.argsort(qid, kind="stable")
            _, dense = np.unique(qid[order], return_inverse=True)
            return (
                to_tensor(Q[order, 1:], dtype=torch.float32, device=T.device),
                torch.as_tensor(dense, dtype=torch.long, device=T.device),
                int(dense.max()) + 1,
            )
        counts = torch.bincount(g, minlength=n_groups)
        starts = torch.cumsum(counts, 0) - counts
        docs = torch.randperm(n_groups, generator=generator)[:_PSEUDO_QUERIES]
        docs = docs.to(T.device)
        pieces, index = [], []
        for i, d in enumerate(docs.tolist()):
            n = int(counts[d])
            length = min(_PSEUDO_QUERY_LEN, n)
            first = int(torch.randint(n - length + 1, (1,), generator=generator))
            s = int(starts[d]) + first
            pieces.append(T[s : s + length])
            index.append(torch.full((length,), i, dtype=torch.long, device=T.device))
        return torch.cat(pieces), torch.cat(index), len(pieces)

    # --- fit / transform ----------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, queries=None):
        """Learn the codebooks from token embeddings (and training queries).

        Parameters
        ----------
        X : array-like of shape (n_tokens, n_dims + 1)
            Token embeddings with each token's document id in
            ``group_column`` (without it when ``group_column=None``).
        y : None
            Ignored.
        queries : array-like of shape (n_query_tokens, n_dims + 1), default=None
            Training query tokens for the ranking losses, the query id in
            column 0. Their relevance is not needed: the exact MaxSim
            ranking is the target. None: pseudo-queries from the documents.

        Returns
        -------
        self : CrossQCompressor
            The fitted compressor.
        """
        torch = import_torch()
        tokens, groups = self._split(X, fitting=True)
        self.n_dims_ = tokens.shape[1]
        context = self._torch_context(
            size=tokens.size * self.bytes_per_token * 256, min_size=5e8
        )
        self._record_device(context)
        device, gen = context.device, context.generator
        _, T, g, n_groups = self._prepare(tokens, groups, device)
        S = self.bytes_per_token
        sample = torch.randperm(T.shape[0], generator=gen)[:_INIT_SAMPLE].to(device)
        books = solver.init_codebooks(T[sample], S, n_iter=10, generator=gen)
        # The codebooks are solved in the same score metric the codes are
        # chosen in (the token's direction and its document context), so the
        # context shapes the codebooks, not only the choice of codes.
        directions, weights = self._directions(T, g, n_groups)
        for _ in range(self.n_refit):
            codes = self._encode(T, g, n_groups, books, directions, weights)
            books = solver.least_squares_codebooks(
                T, codes, S, directions=directions, weights=weights
            )
        self.ranking_loss_curve_ = []
        if self.ranking_loss is not None and self.n_epochs > 0 and n_groups > 1:
            codes = self._encode(T, g, n_groups, books, directions, weights)
            table = solver.padded_documents(g, n_groups)
            Q, qi, n_q = self._training_queries(queries, T, g, n_groups, gen)
            books, self.ranking_loss_curve_ = solver.rank_refine(
                T,
                codes,
                books,
                table,
                Q,
                qi,
                n_q,
                loss=self.ranking_loss,
                directions=directions,
                weights=weights,
                n_candidates=self.n_candidates,
                n_epochs=self.n_epochs,
                generator=gen,
                verbose=self.verbose,
            )
        self.codebooks_ = to_numpy(books, dtype=np.float32)
        return self

    def _codes(self, X):
        """(uint8 codes in X's row order, document ids) of the tokens of X."""
        torch = import_torch()
        tokens, groups = self._split(X, fitting=False)
        device = self._inference_device()
        order, T, g, n_groups = self._prepare(tokens, groups, device)
        books = to_tensor(self.codebooks_, dtype=torch.float32, device=device)
        codes = self._encode(T, g, n_groups, books)
        out = np.empty((tokens.shape[0], codes.shape[1]), dtype=np.uint8)
        out[order] = codes.cpu().numpy().astype(np.uint8)
        return out, groups

    def encode(self, X):
        """The stored codes of tokens: one byte per stage, no document id.

        What an index stores (as faiss's ``sa_encode`` returns it): each token
        encoded given its document's context, computed from the tokens of X
        with the same document id. :meth:`transform` returns the same codes
        beside the document id column.

        Parameters
        ----------
        X : array-like of shape (n_tokens, n_dims + 1)
            As in :meth:`fit`.

        Returns
        -------
        codes : ndarray of shape (n_tokens, bytes_per_token), uint8
            One codeword index per stage for each token, in the row order of X.
        """
        return self._codes(X)[0]

    def decode(self, codes):
        """Token embeddings from their codes alone (no context is stored).

        Parameters
        ----------
        codes : array-like of shape (n_tokens, bytes_per_token)
            Integers in [0, 255], as :meth:`encode` returns them.

        Returns
        -------
        tokens : ndarray of shape (n_tokens, n_dims), float32
            The sum of each token's codewords.
        """
        check_is_fitted(self)
        codes = self._check_codes(codes)
        stages = np.arange(self.codebooks_.shape[0])
        return self.codebooks_[stages, codes.astype(np.intp)].sum(axis=1)

    def transform(self, X):
        """Encode tokens, each given its document's context.

        Parameters
        ----------
        X : array-like of shape (n_tokens, n_dims + 1)
            As in :meth:`fit`. The context of a token is computed from the
            tokens of X with the same document id.

        Returns
        -------
        Xt : ndarray
            With ``group_column=None``: the codes, shape (n_tokens,
            bytes_per_token), uint8, as :meth:`encode` returns them. With a
            document id column: shape (n_tokens, 1 + bytes_per_token), int64,
            the document id in column 0 and the codes after it, so that
            :meth:`inverse_transform` gives back X's shape, the id column in
            its place. Rows in the order of X.
        """
        codes, groups = self._codes(X)
        if self.group_column_index_ is None:
            return codes
        return np.column_stack([groups, codes]).astype(np.int64)

    def inverse_transform(self, X):
        """Decode to X's layout: the decoded tokens and the document ids.

        No document context is needed (none is stored): the tokens come from
        the codes alone, as :meth:`decode` gives them.

        Parameters
        ----------
        X : array-like
            What :meth:`transform` returns: with a document id column, shape
            (n_tokens, 1 + bytes_per_token), the id in column 0; without one,
            the codes, shape (n_tokens, bytes_per_token).

        Returns
        -------
        X_original : ndarray of shape (n_tokens, n_features_in_)
            With a document id column: float64, the ids in ``group_column``
            and the decoded embeddings in the other columns, as in fit's X.
            Without one: the decoded embeddings, float32.
        """
        check_is_fitted(self)
        c = self.group_column_index_
        if c is None:
            return self.decode(X)
        X = np.asarray(X)
        width = 1 + self.bytes_per_token
        if X.ndim != 2 or X.shape[1] != width:
            raise ValueError(
                f"inverse_transform takes what transform returns: shape (n_tokens, "
                f"{width}), the document id in column 0 and {self.bytes_per_token} "
                f"code columns (bytes_per_token={self.bytes_per_token}); got shape "
                f"{X.shape}. decode() takes the codes without the id column."
            )
        tokens = self.decode(X[:, 1:])
        out = np.empty((X.shape[0], self.n_features_in_), dtype=np.float64)
        out[:, c] = X[:, 0]
        out[:, np.arange(self.n_features_in_) != c] = tokens
        return out

    def _check_codes(self, codes):
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != self.bytes_per_token:
            raise ValueError(
                f"codes must have shape (n_tokens, {self.bytes_per_token}) "
                f"(bytes_per_token={self.bytes_per_token}); got shape "
                f"{codes.shape}."
            )
        if codes.dtype.kind not in "iu" or (
            codes.size and (codes.min() < 0 or codes.max() > 255)
        ):
            raise ValueError(
                "codes must be integers in [0, 255] (uint8, as transform returns); "
                f"got dtype {codes.dtype}."
            )
        return codes

    def index_bytes(self, n_tokens, n_documents):
        """Every byte an index of these codes stores.

        Parameters
        ----------
        n_tokens, n_documents : int
            Size of the indexed collection.

        Returns
        -------
        int
            ``n_tokens * bytes_per_token`` code bytes, the float32 codebooks,
            and one int64 offset per document plus one (where each document's
            tokens start). The document context is not stored.
        """
        check_is_fitted(self)
        return int(
            n_tokens * self.bytes_per_token
            + self.codebooks_.size * 4
            + (n_documents + 1) * 8
        )

    def _inference_device(self):
        from sklearn_ext.utils._torch import resolve_device

        return resolve_device(self.device, strict=False)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags

    @classmethod
    def _gpu_check_params(cls):
        params = {"bytes_per_token": 8, "group_column": None, "n_epochs": 3}
        return params, 50_000

    @classmethod
    def _get_test_params(cls):
        return {
            "bytes_per_token": 2,
            "group_column": None,
            "n_epochs": 1,
            "n_refit": 1,
            "device": "cpu",
        }


def torch_normalize(T):
    torch = import_torch()
    return torch.nn.functional.normalize(T, dim=1)

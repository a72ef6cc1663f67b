"""Exact late-interaction (MaxSim) search over full-precision or compressed tokens."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils import check_array

from sklearn_ext.retrieval._base import check_groups, given_column
from sklearn_ext.utils._sklearn_compat import check_is_fitted

__all__ = ["LateInteractionIndex"]

# Document tokens scored per block (bounds the (query tokens x block) matrix).
_BLOCK = 32_768
# Query tokens up to which lookup tables beat decoding the block.
_LUT_MAX_QUERY_TOKENS = 256


class LateInteractionIndex:
    """Exhaustive MaxSim search over a collection of multi-vector documents.

    A document is scored for a query by MaxSim: the sum over the query's
    tokens of the largest dot product with any of the document's tokens
    (ColBERT's late interaction). Documents are stored as the ``compressor``'s
    codes (e.g. a fitted :class:`CrossQCompressor`) or, without one, as
    float32 tokens. Queries stay in full precision. Every document is scored
    (no candidate stage): the query tokens are multiplied with blocks of
    document tokens and the maximum is taken per document by a segmented
    reduction, with no Python loop over documents. Over codes, short queries
    read per-stage lookup tables (``q . codeword``, summed over the code's
    stages) instead of decoding the tokens; longer query batches decode
    each block once.

    Parameters
    ----------
    compressor : fitted CrossQCompressor or None, default=None
        Encodes the added documents (each token given its document's context)
        and decodes them at search time. None keeps float32 tokens.

    Attributes
    ----------
    doc_ids_ : ndarray of shape (n_documents,)
        The ids of the indexed documents, in the order they were added.
    n_tokens_ : int
        Indexed tokens.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.retrieval import LateInteractionIndex
    >>> rng = np.random.default_rng(0)
    >>> docs = np.column_stack([np.repeat([7, 8, 9], 4), rng.normal(size=(12, 8))])
    >>> index = LateInteractionIndex().add(docs)
    >>> query = np.column_stack([[0, 0], docs[4:6, 1:]])  # two tokens of doc 8
    >>> ids, scores = index.search(query, k=2)
    >>> int(ids[0, 0])
    8
    """

    def __init__(self, compressor=None):
        self.compressor = compressor

    def _split(self, X, what):
        given = X
        X = check_array(X, dtype=[np.float32, np.float64], input_name=what)
        if self.compressor is not None:
            check_is_fitted(self.compressor)
            c = self.compressor.group_column_index_
            if c is None:
                raise ValueError(
                    "The compressor was fitted with group_column=None; an index "
                    "needs each token's document id in X."
                )
        else:
            c = 0
        if X.shape[1] < 2:
            raise ValueError(
                f"{what} needs an id column and at least one embedding column; "
                f"got {X.shape[1]} column(s)."
            )
        ids = check_groups(X[:, c], c, given=given_column(given, c), name=what)
        return X, ids, np.delete(X, c, axis=1).astype(np.float32)

    def add(self, X):
        """Add documents: token embeddings with their document ids.

        Parameters
        ----------
        X : array-like of shape (n_tokens, n_dims + 1)
            Each row a document token, its document id (an integer) in
            column 0, or in the compressor's ``group_column``. A document's
            tokens must all come in one call; ids already in the index are
            refused.

        Returns
        -------
        self : LateInteractionIndex
            The index, with the documents added.
        """
        X, ids, tokens = self._split(X, "X")
        if hasattr(self, "doc_ids_"):
            if tokens.shape[1] != self._n_dims:
                raise ValueError(
                    f"X has {tokens.shape[1]} embedding dimensions; the index "
                    f"holds {self._n_dims}."
                )
            again = np.intersect1d(ids, self.doc_ids_)
            if again.size:
                raise ValueError(
                    f"Documents {again[:5].tolist()} are already in the index; "
                    "add each document's tokens in one call."
                )
        order = np.argsort(ids, kind="stable")
        new_docs, counts = np.unique(ids[order], return_counts=True)
        stored = (
            tokens[order]
            if self.compressor is None
            else self.compressor.transform(X)[order]
        )
        if not hasattr(self, "doc_ids_"):
            self._n_dims = tokens.shape[1]
            self._stored = [stored]
            self._counts = [counts]
            self.doc_ids_ = new_docs
        else:
            self._stored.append(stored)
            self._counts.append(counts)
            self.doc_ids_ = np.concatenate([self.doc_ids_, new_docs])
        self._data = np.concatenate(self._stored)
        self._stored = [self._data]
        counts = np.concatenate(self._counts)
        self._counts = [counts]
        self._starts = np.r_[0, np.cumsum(counts)[:-1]]
        self.n_tokens_ = int(self._data.shape[0])
        return self

    def stored_bytes(self):
        """Count the bytes the index stores.

        Returns
        -------
        int
            Codes (or float32 tokens), codebooks and document offsets.
        """
        self._check_built()
        if self.compressor is None:
            return int(self._data.nbytes + (len(self.doc_ids_) + 1) * 8)
        return self.compressor.index_bytes(self.n_tokens_, len(self.doc_ids_))

    def _check_built(self):
        if not hasattr(self, "doc_ids_"):
            raise ValueError("The index is empty: call add() first.")

    def _block_scores(self, Q, lo, hi):
        """(n_query_tokens, hi - lo) dot products with document tokens lo:hi."""
        if self.compressor is None:
            return Q @ self._data[lo:hi].T
        books = self.compressor.codebooks_
        codes = self._data[lo:hi]
        if Q.shape[0] <= _LUT_MAX_QUERY_TOKENS:
            lut = np.einsum("td,skd->tsk", Q, books)  # (t, stages, 256)
            out = lut[:, 0, codes[:, 0]]
            for s in range(1, books.shape[0]):
                out += lut[:, s, codes[:, s]]
            return out
        stages = np.arange(books.shape[0])
        decoded = books[stages, codes.astype(np.intp)].sum(axis=1)
        return Q @ decoded.T

    def scores(self, Q):
        """MaxSim scores of every query against every indexed document.

        Parameters
        ----------
        Q : array-like of shape (n_query_tokens, n_dims + 1)
            Query tokens, the query id (an integer) in column 0.

        Returns
        -------
        query_ids : ndarray of shape (n_queries,)
            The sorted distinct query ids: the rows of ``scores``.
        scores : ndarray of shape (n_queries, n_documents), float32
            Columns in the order of ``doc_ids_``.
        """
        self._check_built()
        given = Q
        Q = check_array(Q, dtype=[np.float32, np.float64], input_name="Q")
        if Q.shape[1] != self._n_dims + 1:
            raise ValueError(
                f"Q must have the query id in column 0 and {self._n_dims} "
                f"embedding dimensions ({self._n_dims + 1} columns); got "
                f"{Q.shape[1]}."
            )
        qids = check_groups(
            Q[:, 0], 0, given=given_column(given, 0), name="Q", kind="query"
        )
        query_ids, qindex = np.unique(qids, return_inverse=True)
        tokens = np.ascontiguousarray(Q[:, 1:], dtype=np.float32)
        n_docs = len(self.doc_ids_)
        per_token = np.empty((tokens.shape[0], n_docs), dtype=np.float32)
        bounds = np.r_[self._starts, self.n_tokens_]
        d0 = 0
        while d0 < n_docs:  # blocks of whole documents
            d1 = max(d0 + 1, int(np.searchsorted(bounds, bounds[d0] + _BLOCK)) - 1)
            d1 = min(d1, n_docs)
            lo, hi = bounds[d0], bounds[d1]
            block = self._block_scores(tokens, lo, hi)
            per_token[:, d0:d1] = np.maximum.reduceat(
                block, self._starts[d0:d1] - lo, axis=1
            )
            d0 = d1
        out = np.zeros((len(query_ids), n_docs), dtype=np.float32)
        np.add.at(out, qindex, per_token)
        return query_ids, out

    def search(self, Q, k=10):
        """The ``k`` best documents of each query by MaxSim.

        Parameters
        ----------
        Q : array-like of shape (n_query_tokens, n_dims + 1)
            Query tokens, the query id in column 0.
        k : int, default=10
            Documents per query (at most the number indexed).

        Returns
        -------
        doc_ids : ndarray of shape (n_queries, k)
            Best first; the rows follow the sorted distinct query ids.
        scores : ndarray of shape (n_queries, k), float32
            Their MaxSim scores.
        """
        if not (isinstance(k, (int, np.integer)) and k >= 1):
            raise ValueError(f"k must be a positive int; got {k!r}.")
        _, scores = self.scores(Q)
        k = min(int(k), scores.shape[1])
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(scores, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        top = np.take_along_axis(top, order, axis=1)
        return self.doc_ids_[top], np.take_along_axis(top_scores, order, axis=1)

"""Late-interaction (MaxSim) search over full-precision or compressed tokens.

Exhaustive search, or (over the codes of a :class:`CrossQCompressor`) a
PLAID-style candidate stage: query tokens -> their nearest coarse cells (the
leading bytes of the codes) -> the documents of those cells (inverted lists
built at add time) -> an approximate score from the cells alone -> exact
MaxSim on the decoded tokens of the best candidates. The scoring runs in
torch, on the CPU or a GPU, in blocks of bounded size.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import os
from numbers import Integral

import numpy as np
from sklearn.utils import check_array

from sklearn_ext.retrieval._base import check_groups, given_column
from sklearn_ext.utils._sklearn_compat import check_is_fitted

__all__ = ["LateInteractionIndex"]

# The file format of save/load: a marker and its version.
_FORMAT = "sklearn_ext.LateInteractionIndex"
_FORMAT_VERSION = 1
_N_CODEWORDS = 256
# Floats in one block of (query tokens x document tokens) scores: the largest
# temporary of a search (16 MB), whatever the size of the index.
_BLOCK_FLOATS = 1 << 22


class _Growable:
    """An array that grows by doubling its capacity (amortised O(1) appends)."""

    def __init__(self, dtype, tail=()):
        self.data = np.empty((0, *tail), dtype=dtype)
        self.size = 0

    def extend(self, values):
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.empty(
                (max(need, 2 * len(self.data), 64), *self.data.shape[1:]),
                dtype=self.data.dtype,
            )
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : need] = values
        self.size = need

    @property
    def view(self):
        return self.data[: self.size]


def _ranges(lo, hi):
    """The concatenation of ``arange(lo[i], hi[i])`` over i, vectorised."""
    lens = hi - lo
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(lo - (np.cumsum(lens) - lens), lens)
    return shift + np.arange(total, dtype=np.int64)


def _runs_of_sorted(a):
    """(distinct values, their counts) of a sorted array, in one pass.

    ``np.unique`` hashes integer arrays first (numpy 2), several times slower
    than this on the millions of keys of an add.
    """
    if len(a) == 0:
        return a, np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])
    return a[first], np.diff(np.r_[first, len(a)])


def _push_run(runs, run, size, merge):
    """Append a sorted run; merge the last two while the older is not 2x larger.

    The runs' sizes then fall geometrically: O(log n) runs, and each element
    is merged O(log n) times over all the adds (amortised, as in an LSM tree).
    """
    runs.append(run)
    while len(runs) > 1 and size(runs[-2]) <= 2 * size(runs[-1]):
        last = runs.pop()
        runs[-1] = merge(runs[-1], last)


def _merge_ids(a, b):
    return np.sort(np.concatenate([a, b]), kind="stable")


def _merge_lists(a, b):
    """Two inverted-list runs (CSR: cell offsets, documents) merged into one.

    Within a cell the documents of ``a`` (added earlier) come first, then
    those of ``b``: the documents of a cell stay in the order they were added.
    """
    (off_a, docs_a), (off_b, docs_b) = a, b
    n_a, n_b = np.diff(off_a), np.diff(off_b)
    off = np.zeros_like(off_a)
    np.cumsum(n_a + n_b, out=off[1:])
    docs = np.empty(len(docs_a) + len(docs_b), dtype=docs_a.dtype)
    docs[np.repeat(off[:-1], n_a) + _within(off_a, n_a)] = docs_a
    docs[np.repeat(off[:-1] + n_a, n_b) + _within(off_b, n_b)] = docs_b
    return off, docs


def _within(off, n):
    """Position of each element within its cell, for CSR offsets ``off``."""
    return np.arange(int(off[-1]), dtype=np.int64) - np.repeat(off[:-1], n)


def _n_postings(run):
    return len(run[1])


class LateInteractionIndex:
    """MaxSim search over multi-vector documents, exhaustive or by candidates.

    A document is scored for a query by MaxSim: the sum over the query's
    tokens of the largest dot product with any of the document's tokens
    (ColBERT's late interaction). Documents are stored as the ``compressor``'s
    codes (e.g. a fitted :class:`CrossQCompressor`) or, without one, as
    float32 tokens. Queries stay in full precision.

    **Candidate search** (over codes, ``n_probe`` not None), in the manner of
    PLAID [2]_: the first ``coarse_bytes`` bytes of a token's code name its
    *cell* (its stage-0 codeword, or the pair of its stage-0 and stage-1
    codewords: 256 or 65,536 cells, whose centroid is the sum of those
    codewords). At add time an inverted list maps each cell to the documents
    with a token in it. A query token probes its ``n_probe`` cells of largest
    dot product; the documents of the probed cells are the candidates. Each
    candidate gets an approximate MaxSim in which every token stands for its
    cell's centroid (one table lookup per token and query token); the
    ``n_candidates`` best are scored exactly, by MaxSim over their decoded
    tokens. Only those are decoded. **Exhaustive search** (``n_probe=None``,
    and always without a compressor) scores every document exactly.

    The scoring runs in torch on ``device``, in blocks of at most 4M floats of
    (query tokens x document tokens) scores, followed by a segmented maximum
    per document: memory stays bounded whatever the size of the index. Adds
    are amortised: tokens, offsets and ids live in arrays that double their
    capacity, and the inverted lists in sorted runs merged geometrically, so
    adding documents in pieces costs about what one add costs and gives the
    same search results.

    Parameters
    ----------
    compressor : fitted CrossQCompressor or None, default=None
        Encodes the added documents (each token given its document's context);
        the index keeps a copy of its codebooks to decode. None keeps float32
        tokens (exhaustive search only).
    n_probe : int or None, default=16
        Cells probed per query token in candidate search; None searches
        exhaustively. Read at search time.
    n_candidates : int, "auto" or None, default="auto"
        Candidates, by approximate score, that are scored exactly (at least
        ``k``); ``"auto"``: 1% of the indexed documents, at least 256; None
        scores every candidate exactly. Read at search time.
    coarse_bytes : {1, 2}, default=2
        Leading bytes of a code that name its cell (at most the code's width).
        Read at the first add.
    device : str or torch.device, default="auto"
        Where the scores are computed: ``"auto"`` (CUDA when available),
        ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"``. The stored index stays
        in host memory; a GPU holds a copy of the codes, extended as
        documents are added.

    Attributes
    ----------
    doc_ids_ : ndarray of shape (n_documents,)
        The ids of the indexed documents, in the order they were added (and
        by id within one add).
    n_tokens_ : int
        Indexed tokens.

    Notes
    -----
    The defaults were chosen on synthetic development collections with
    planted topics (``benchmarks/_crossq_index.py``, seeds 100 and 101, not
    the benchmark's; CrossQ at 4 bytes per token): with 256 cells
    (``coarse_bytes=1``) the probed lists held most documents and the
    approximate score lost much of the exhaustive top 10; with 65,536 cells
    the share of the top 10 kept grew with ``n_probe`` and ``n_candidates``
    and fell with the size of the collection at a fixed ``n_candidates``;
    ``n_probe=16`` and 1% of the documents kept it at 100,000 documents
    (seed 100) while scoring exactly a small share of them (the user guide
    quotes the benchmark). A
    collection whose relevant documents share few cells with the query needs
    a larger ``n_probe``; check against ``n_probe=None`` on a sample of your
    queries. The inverted lists take 4 bytes per (cell, document) pair, about
    as many bytes as 4-byte codes; an index built with ``n_probe=None``
    builds them only at its first candidate search.

    References
    ----------
    .. [1] O. Khattab and M. Zaharia, "ColBERT: Efficient and Effective
       Passage Search via Contextualized Late Interaction over BERT",
       SIGIR 2020.
    .. [2] K. Santhanam, O. Khattab, C. Potts and M. Zaharia, "PLAID: An
       Efficient Engine for Late Interaction Retrieval", CIKM 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.retrieval import LateInteractionIndex
    >>> rng = np.random.default_rng(0)
    >>> docs = np.column_stack([np.repeat([7, 8, 9], 4), rng.normal(size=(12, 8))])
    >>> index = LateInteractionIndex(device="cpu").add(docs)
    >>> scores, ids = index.search(docs[4:6, 1:], k=2)  # two tokens of doc 8
    >>> int(ids[0, 0])
    8
    """

    def __init__(
        self,
        compressor=None,
        *,
        n_probe=16,
        n_candidates="auto",
        coarse_bytes=2,
        device="auto",
    ):
        self.compressor = compressor
        self.n_probe = n_probe
        self.n_candidates = n_candidates
        self.coarse_bytes = coarse_bytes
        self.device = device

    # --- state ------------------------------------------------------------------

    @property
    def doc_ids_(self):
        if not hasattr(self, "_ids"):
            raise AttributeError("doc_ids_: the index is empty; call add() first.")
        return self._ids.view

    @property
    def n_tokens_(self):
        if not hasattr(self, "_ids"):
            raise AttributeError("n_tokens_: the index is empty; call add() first.")
        return self._store.size

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_on_device", None)  # tensors of a device: rebuilt on demand
        return state

    def _check_built(self):
        if not hasattr(self, "_ids"):
            raise ValueError("The index is empty: call add() first.")

    @property
    def _codes(self):
        return getattr(self, "_codebooks", None) is not None

    # --- add --------------------------------------------------------------------

    def _split(self, X, what):
        given = X
        X = check_array(X, dtype=[np.float32, np.float64], input_name=what)
        c = 0
        if self.compressor is not None:
            check_is_fitted(self.compressor)
            c = self.compressor.group_column_index_
            if c is None:
                raise ValueError(
                    "The compressor was fitted with group_column=None; an index "
                    "needs each token's document id in X."
                )
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
        if getattr(self, "_loaded_without_compressor", False) and self._codes:
            raise ValueError(
                "This index was loaded without its compressor, so it cannot "
                "encode new tokens: pass compressor= to LateInteractionIndex.load, "
                "or add codes with add_codes."
            )
        X, ids, tokens = self._split(X, "X")
        self._check_dims(tokens.shape[1], "X")
        if self.compressor is None:
            if hasattr(self, "_ids") and self._codes:
                raise ValueError(
                    "The index holds codes; it cannot take float32 tokens "
                    "without a compressor."
                )
            return self._append(tokens, ids, codebooks=None)
        self._check_compressor()
        return self._append(self.compressor.encode(X), ids, self._books_of())

    def add_codes(self, codes, doc_ids):
        """Add documents already encoded (e.g. by a batch job).

        Parameters
        ----------
        codes : array-like of shape (n_tokens, bytes_per_token)
            Integer codes in [0, 255], as the compressor's ``encode`` gives
            them, of the codebooks this index holds.
        doc_ids : array-like of shape (n_tokens,)
            Each token's document id (integers). A document's tokens must all
            come in one call.

        Returns
        -------
        self : LateInteractionIndex
            The index, with the documents added.
        """
        if not self._codes and (self.compressor is None or hasattr(self, "_ids")):
            raise ValueError(
                "This index holds float32 tokens (no compressor): it has no "
                "codebooks to decode codes with."
            )
        books = self._codebooks if self._codes else self._books_of()
        codes = np.asarray(codes)
        if codes.ndim != 2 or codes.shape[1] != books.shape[0]:
            raise ValueError(
                f"codes must have shape (n_tokens, {books.shape[0]}): the index "
                f"holds {books.shape[0]}-byte codes (bytes_per_token="
                f"{books.shape[0]}); got codes of shape {codes.shape}."
            )
        if codes.dtype.kind not in "iu" or (
            codes.size and (codes.min() < 0 or codes.max() > _N_CODEWORDS - 1)
        ):
            raise ValueError(
                "codes must be integers in [0, 255] (uint8, as the compressor's "
                f"encode returns them); got dtype {codes.dtype}."
            )
        doc_ids = np.asarray(doc_ids)
        if doc_ids.shape != (codes.shape[0],):
            raise ValueError(
                f"doc_ids must have shape ({codes.shape[0]},), one id per code "
                f"row; got shape {doc_ids.shape}."
            )
        ids = check_groups(doc_ids.astype(np.float64), 0, given=doc_ids, name="doc_ids")
        return self._append(codes.astype(np.uint8), ids, books)

    def _books_of(self):
        check_is_fitted(self.compressor)
        return np.ascontiguousarray(self.compressor.codebooks_, dtype=np.float32)

    def _check_compressor(self):
        """Refuse a compressor whose codes would not match the stored ones."""
        if not hasattr(self, "_ids"):
            return
        books = self._books_of()
        if not self._codes:
            raise ValueError(
                "The index holds float32 tokens; it cannot take a compressor's codes."
            )
        if books.shape != self._codebooks.shape:
            raise ValueError(
                f"The compressor now makes {books.shape[0]}-byte codes of "
                f"{books.shape[2]} dimensions; the index holds "
                f"{self._codebooks.shape[0]}-byte codes of "
                f"{self._codebooks.shape[2]} (codes of another width)."
            )
        if not np.array_equal(books, self._codebooks):
            raise ValueError(
                "The compressor's codebooks changed since the index was built "
                "(it was refitted): its codes would not decode with the stored "
                "codebooks. Build a new index."
            )

    def _check_dims(self, n_dims, what):
        if hasattr(self, "_ids") and n_dims != self._n_dims:
            raise ValueError(
                f"{what} has {n_dims} embedding dimensions; the index holds "
                f"{self._n_dims}-dimensional tokens."
            )

    def _append(self, stored, ids, codebooks):
        order = np.argsort(ids, kind="stable")
        new_docs, counts = _runs_of_sorted(ids[order])
        stored = stored[order]
        first = not hasattr(self, "_ids")
        if first:
            coarse = self.coarse_bytes
            if coarse not in (1, 2):
                raise ValueError(f"coarse_bytes must be 1 or 2; got {coarse!r}.")
            self._codebooks = codebooks
            self._n_dims = (
                int(codebooks.shape[2]) if codebooks is not None else stored.shape[1]
            )
            self._coarse = None if codebooks is None else min(coarse, len(codebooks))
            self._store = _Growable(stored.dtype, stored.shape[1:])
            self._offsets = _Growable(np.int64)
            self._offsets.extend(np.zeros(1, dtype=np.int64))
            self._ids = _Growable(np.int64)
            self._id_runs = []
            # Inverted lists: built at add time for candidate search, or at
            # the first candidate search of an index built with n_probe=None.
            self._lists = (
                [] if codebooks is not None and self.n_probe is not None else None
            )
        else:
            again = np.concatenate(
                [
                    run[np.isin(run, new_docs, assume_unique=True)]
                    for run in self._id_runs
                ]
            )
            if again.size:
                raise ValueError(
                    f"Documents {np.sort(again)[:5].tolist()} are already in the "
                    "index; add each document's tokens in one call."
                )
        first_doc = self._ids.size
        self._offsets.extend(self._store.size + np.cumsum(counts))
        self._store.extend(stored)
        self._ids.extend(new_docs)
        _push_run(self._id_runs, new_docs, len, _merge_ids)
        if self._lists is not None:
            doc_of = np.repeat(np.arange(first_doc, self._ids.size), counts)
            _push_run(
                self._lists, self._lists_of(stored, doc_of), _n_postings, _merge_lists
            )
        return self

    def _cells(self, codes):
        """The cell of each code: its first ``coarse_bytes`` bytes, as one id."""
        cells = codes[:, 0].astype(np.int64)
        if self._coarse == 2:
            cells = cells * _N_CODEWORDS + codes[:, 1]
        return cells

    def _lists_of(self, codes, doc_of):
        """Inverted lists of one add: cell -> its documents (CSR, int32 docs)."""
        n_cells = _N_CODEWORDS**self._coarse
        key = np.sort(self._cells(codes) << 32 | doc_of)
        key = _runs_of_sorted(key)[0]
        cells = key >> 32
        off = np.zeros(n_cells + 1, dtype=np.int64)
        np.cumsum(np.bincount(cells, minlength=n_cells), out=off[1:])
        return off, (key & 0xFFFFFFFF).astype(np.int32)

    # --- persistence --------------------------------------------------------------

    def save(self, path):
        """Write the index to a numpy ``.npz`` file (no pickled objects).

        The file holds the codes (or float32 tokens), the document offsets and
        ids, the codebooks, the inverted lists, the search parameters and a
        format version; the compressor itself is not stored (decoding needs
        only the codebooks).

        Parameters
        ----------
        path : str or path-like
            The file, written as given (no extension is added).
        """
        self._check_built()
        arrays = {
            "format": np.array(_FORMAT),
            "format_version": np.array(_FORMAT_VERSION),
            "stored": self._store.view,
            "offsets": self._offsets.view,
            "doc_ids": self._ids.view,
            "n_dims": np.array(self._n_dims),
            "n_probe": np.array(-1 if self.n_probe is None else self.n_probe),
            "n_candidates": np.array(str(self.n_candidates)),
        }
        if self._codes:
            arrays.update(
                codebooks=self._codebooks, coarse_bytes=np.array(self._coarse)
            )
        if self._codes and self._lists is not None:
            off, docs = self._merged_lists()
            arrays.update(list_offsets=off, list_docs=docs)
        with open(os.fspath(path), "wb") as f:
            np.savez(f, **arrays)

    def _ensure_lists(self):
        """Build the inverted lists of every stored code, if not yet built."""
        if self._lists is None:
            counts = np.diff(self._offsets.view)
            doc_of = np.repeat(np.arange(self._ids.size), counts)
            self._lists = [self._lists_of(self._store.view, doc_of)]

    def _merged_lists(self):
        while len(self._lists) > 1:
            last = self._lists.pop()
            self._lists[-1] = _merge_lists(self._lists[-1], last)
        return self._lists[0]

    @classmethod
    def load(cls, path, compressor=None, *, device="auto"):
        """Read an index written by :meth:`save`.

        Parameters
        ----------
        path : str or path-like
            The file.
        compressor : fitted CrossQCompressor or None, default=None
            The compressor of the saved codes, to add documents by
            :meth:`add` (its codebooks must equal the saved ones). Without it
            the index searches and takes :meth:`add_codes`.
        device : str or torch.device, default="auto"
            As in the constructor.

        Returns
        -------
        index : LateInteractionIndex
        """
        with np.load(os.fspath(path), allow_pickle=False) as f:
            data = {name: f[name] for name in f.files}
        if "format" not in data or str(data["format"]) != _FORMAT:
            raise ValueError(
                f"{os.fspath(path)!r} is not a LateInteractionIndex file (no "
                f"{_FORMAT!r} marker)."
            )
        version = int(data["format_version"])
        if version != _FORMAT_VERSION:
            raise ValueError(
                f"{os.fspath(path)!r} has index format version {version}; this "
                f"version of sklearn_ext reads format version {_FORMAT_VERSION}. "
                "Rebuild the index from the documents."
            )
        codes = "codebooks" in data
        if compressor is not None:
            if not codes:
                raise ValueError("The saved index holds float32 tokens, not codes.")
            check_is_fitted(compressor)
            if not np.array_equal(
                np.asarray(compressor.codebooks_, dtype=np.float32), data["codebooks"]
            ):
                raise ValueError(
                    "The compressor's codebooks differ from the saved index's: "
                    "it is not the compressor of these codes."
                )
        n_probe, n_cand = int(data["n_probe"]), str(data["n_candidates"])
        index = cls(
            compressor,
            n_probe=None if n_probe < 0 else n_probe,
            n_candidates={"None": None, "auto": "auto"}.get(n_cand) or int(n_cand),
            coarse_bytes=int(data["coarse_bytes"]) if codes else 2,
            device=device,
        )
        index._loaded_without_compressor = compressor is None
        index._codebooks = data["codebooks"] if codes else None
        index._n_dims = int(data["n_dims"])
        index._coarse = int(data["coarse_bytes"]) if codes else None
        for name, key in (
            ("_store", "stored"),
            ("_offsets", "offsets"),
            ("_ids", "doc_ids"),
        ):
            grow = _Growable(data[key].dtype, data[key].shape[1:])
            grow.extend(data[key])
            setattr(index, name, grow)
        index._id_runs = [np.sort(data["doc_ids"])]
        index._lists = (
            [(data["list_offsets"], data["list_docs"])]
            if "list_offsets" in data
            else None
        )
        return index

    # --- memory -----------------------------------------------------------------

    def stored_bytes(self):
        """Count the bytes the index stores.

        Returns
        -------
        int
            Codes (or float32 tokens), codebooks, document offsets and the
            inverted lists (4 bytes per (cell, document) pair and the cell
            offsets). The document ids (8 bytes each) are not counted.
        """
        self._check_built()
        n = self._store.view.nbytes + (self._ids.size + 1) * 8
        if self._codes:
            n += self._codebooks.nbytes
            lists = self._lists or []
            n += sum(off.nbytes + docs.nbytes for off, docs in lists)
        return int(n)

    # --- search -----------------------------------------------------------------

    def _queries(self, Q):
        """(query ids or None, dense query index, float32 tokens) of Q."""
        self._check_built()
        given = Q
        Q = check_array(Q, dtype=[np.float32, np.float64], input_name="Q")
        d = self._n_dims
        if Q.shape[1] == d + 1:
            qids = check_groups(
                Q[:, 0], 0, given=given_column(given, 0), name="Q", kind="query"
            )
            query_ids, qindex = np.unique(qids, return_inverse=True)
            tokens = Q[:, 1:]
        elif Q.shape[1] == d:
            query_ids, qindex, tokens = None, np.zeros(len(Q), dtype=np.int64), Q
        else:
            raise ValueError(
                f"Q has {Q.shape[1]} columns; the index holds {d}-dimensional "
                f"tokens: pass one query's tokens as (n_tokens, {d}), or several "
                f"queries with the query id in column 0 and {d} embedding "
                f"dimensions ({d + 1} columns)."
            )
        return query_ids, qindex, np.ascontiguousarray(tokens, dtype=np.float32)

    def _torch(self):
        """(torch, device, stored rows as a tensor on the device, codebooks)."""
        from sklearn_ext.utils._torch import import_torch, resolve_device

        torch = import_torch()
        device = resolve_device(self.device)
        size = self._store.size
        if device.type == "cpu":
            store = torch.from_numpy(self._store.view)  # a view, no copy
        else:
            # A copy on the device that grows with the index, by doubling.
            cache = self.__dict__.setdefault("_on_device", {})
            buf, n = cache.get(str(device), (None, 0))
            if buf is None or len(buf) < size:
                chunk = torch.from_numpy(self._store.data[:0])
                grown = torch.empty(
                    (max(size, 2 * (0 if buf is None else len(buf))), *chunk.shape[1:]),
                    dtype=chunk.dtype,
                    device=device,
                )
                if n:
                    grown[:n] = buf[:n]
                buf = grown
            if n < size:
                buf[n:size] = torch.from_numpy(self._store.data[n:size]).to(device)
            cache[str(device)] = (buf, size)
            store = buf[:size]
        books = torch.from_numpy(self._codebooks).to(device) if self._codes else None
        return torch, device, store, books

    def _blocks(self, docs, n_rows):
        """Slices of ``docs`` whose tokens times ``n_rows`` fit in one block.

        Yields ``(b0, b1, rows, lengths)``: the documents ``docs[b0:b1]``,
        their token rows and their numbers of tokens.
        """
        off = self._offsets.view
        lens = off[docs + 1] - off[docs]
        budget = max(_BLOCK_FLOATS // max(n_rows, 1), 1)
        ends = np.cumsum(lens)
        b0 = 0
        while b0 < len(docs):
            b1 = int(np.searchsorted(ends, ends[b0] - lens[b0] + budget, "right"))
            b1 = max(b1, b0 + 1)
            part = docs[b0:b1]
            yield b0, b1, _ranges(off[part], off[part + 1]), lens[b0:b1]
            b0 = b1

    @staticmethod
    def _segment_max(torch, S, lens):
        """Per-document maxima of S's columns (documents' tokens, in order)."""
        seg = torch.repeat_interleave(
            torch.arange(len(lens), device=S.device),
            torch.from_numpy(lens).to(S.device),
        )
        out = torch.full((S.shape[0], len(lens)), -torch.inf, device=S.device)
        return out.scatter_reduce_(1, seg.expand_as(S), S, reduce="amax")

    def _exact(self, ctx, Qt, qindex, n_queries, docs):
        """Exact MaxSim of documents ``docs``, block by block.

        Yields ``(b0, b1, scores)``, ``scores`` a (n_queries, b1 - b0) tensor.
        """
        torch, device, store, books = ctx
        lut = None
        if books is not None and Qt.shape[0] <= books.shape[2]:
            # (stage, query token, codeword) dot products: a score is the sum
            # of one lookup per stage, cheaper than decoding while the query
            # has fewer tokens than dimensions.
            lut = torch.einsum("td,swd->stw", Qt, books)
        for b0, b1, rows, lens in self._blocks(docs, Qt.shape[0]):
            T = store.index_select(0, torch.from_numpy(rows).to(device))
            if lut is not None:  # few query tokens: sums of table lookups
                codes = T.long()
                S = lut[0].index_select(1, codes[:, 0])
                for s in range(1, len(lut)):
                    S += lut[s].index_select(1, codes[:, s])
            elif books is not None:  # many: decode the block once
                codes = T.long()
                T = books[0].index_select(0, codes[:, 0])
                for s in range(1, len(books)):
                    T += books[s].index_select(0, codes[:, s])
                S = Qt @ T.T
            else:
                S = Qt @ T.T
            best = self._segment_max(torch, S, lens)
            scores = torch.zeros(n_queries, b1 - b0, device=device)
            yield b0, b1, scores.index_add_(0, qindex, best)

    def _cell_scores(self, ctx, Qt):
        """(query tokens, cells) dot products with the cells' centroids."""
        books = ctx[3]
        lut = Qt @ books[0].T
        if self._coarse == 2:
            lut = (lut[:, :, None] + (Qt @ books[1].T)[:, None, :]).reshape(len(Qt), -1)
        return lut

    def _candidates(self, ctx, Qt, k):
        """(probed, kept): sorted document positions of one query's candidates.

        ``probed``: the documents of the cells its tokens probe; ``kept``: the
        ``n_candidates`` of them (at least ``k``) of best approximate score.
        An index of at most ``n_candidates`` documents is scored whole; where
        the probed cells hold fewer documents, the probe widens (4x cells).
        """
        torch, device, store, _ = ctx
        keep = self._n_keep(k)
        if keep is not None and self._ids.size <= keep:
            everything = np.arange(self._ids.size)
            return everything, everything
        self._ensure_lists()
        Sc = self._cell_scores(ctx, Qt)
        n_probe = min(int(self.n_probe), Sc.shape[1])
        while True:
            top_s, top_c = torch.topk(Sc, n_probe, dim=1)
            top_s, top_c = top_s.cpu().numpy(), top_c.cpu().numpy().ravel()
            found, owner = [], []
            for off, docs in self._lists:
                lo, hi = off[top_c], off[top_c + 1]
                found.append(docs[_ranges(lo, hi)])
                owner.append(np.repeat(np.arange(top_c.size), hi - lo))
            probed, dense = np.unique(np.concatenate(found), return_inverse=True)
            wanted = k if keep is None else keep
            if len(probed) >= wanted or n_probe == Sc.shape[1]:
                break
            n_probe = min(4 * n_probe, Sc.shape[1])
        probed = probed.astype(np.int64)
        if keep is None or len(probed) <= keep:
            return probed, probed
        # Approximate MaxSim from the postings alone: for each query token,
        # the score of its best probed cell that holds a token of the document
        # (0 where none does); no document token is read.
        owner = np.concatenate(owner)
        A = np.zeros((len(Qt), len(probed)), dtype=np.float32)
        np.maximum.at(A, (owner // n_probe, dense), top_s.ravel()[owner])
        approx = A.sum(0)
        top = np.argpartition(-approx, keep - 1)[:keep]
        return probed, probed[np.sort(top)]

    def _n_keep(self, k):
        """Documents scored exactly per query (None: every candidate)."""
        if self.n_candidates is None:
            return None
        if isinstance(self.n_candidates, str):  # "auto"
            return max(256, self._ids.size // 100, k)
        return max(int(self.n_candidates), k)

    def _check_search(self, k):
        if not (isinstance(k, Integral) and not isinstance(k, bool) and k >= 1):
            raise ValueError(f"k must be a positive int; got {k!r}.")
        for name in ("n_probe", "n_candidates"):
            value = getattr(self, name)
            if name == "n_candidates" and isinstance(value, str) and value == "auto":
                continue
            if value is not None and not (
                isinstance(value, Integral)
                and not isinstance(value, bool)
                and value >= 1
            ):
                raise ValueError(
                    f"{name} must be a positive int"
                    + (', "auto"' if name == "n_candidates" else "")
                    + f" or None; got {value!r}."
                )

    def _exhaustive(self):
        return self.n_probe is None or not self._codes

    def search(self, Q, k=10):
        """The ``k`` best documents of each query by MaxSim.

        Candidate search over codes (``n_probe`` not None), exhaustive
        otherwise; see the class description.

        Parameters
        ----------
        Q : array-like of shape (n_query_tokens, n_dims + 1) or (n_query_tokens, n_dims)
            Query tokens with the query id (an integer) in column 0, or the
            tokens of a single query without an id column.
        k : int, default=10
            Documents per query.

        Returns
        -------
        scores : ndarray of shape (n_queries, k), float32
            MaxSim scores, best first (faiss's order: scores, then ids).
            Where fewer than ``k`` documents are found (a small index, or
            few candidates), the row ends with ``-inf``.
        ids : ndarray of shape (n_queries, k), int64
            The documents' ids, ``-1`` after the last found document. Rows
            follow the sorted distinct query ids (one row without an id
            column).
        """
        self._check_built()
        self._check_search(k)
        _, qindex, tokens = self._queries(Q)
        from sklearn_ext.utils._torch import cpu_thread_limit

        n_queries = int(qindex.max()) + 1
        out_s = np.full((n_queries, k), -np.inf, dtype=np.float32)
        out_i = np.full((n_queries, k), -1, dtype=np.int64)
        with cpu_thread_limit():
            ctx = self._torch()
            torch, device = ctx[0], ctx[1]
            Qt = torch.from_numpy(tokens).to(device)
            qt = torch.from_numpy(qindex).to(device)
            if self._exhaustive():
                results = self._search_all(ctx, Qt, qt, n_queries, k)
            else:
                results = []
                for q in range(n_queries):
                    mine = np.flatnonzero(qindex == q)
                    Qq = Qt[torch.from_numpy(mine).to(device)]
                    zero = torch.zeros(len(mine), dtype=torch.long, device=device)
                    _, kept = self._candidates(ctx, Qq, k)
                    s = np.zeros(0, dtype=np.float32)
                    for _, _, block in self._exact(ctx, Qq, zero, 1, kept):
                        s = np.concatenate([s, block[0].cpu().numpy()])
                    results.append((s, kept))
        for q, (s, docs) in enumerate(results):
            order = np.lexsort((docs, -s))[:k]
            out_s[q, : len(order)] = s[order]
            out_i[q, : len(order)] = self._ids.view[docs[order]]
        return out_s, out_i

    def _search_all(self, ctx, Qt, qt, n_queries, k):
        """Exhaustive top k of every query: a running top k over blocks."""
        torch = ctx[0]
        best_s = torch.empty((n_queries, 0), device=Qt.device)
        best_i = torch.empty((n_queries, 0), dtype=torch.long, device=Qt.device)
        everything = np.arange(self._ids.size)
        for b0, b1, s in self._exact(ctx, Qt, qt, n_queries, everything):
            cand_s = torch.cat([best_s, s], 1)
            span = torch.arange(b0, b1, device=Qt.device).expand(n_queries, -1)
            cand_i = torch.cat([best_i, span], 1)
            best_s, j = torch.topk(cand_s, min(k, cand_s.shape[1]), dim=1)
            best_i = cand_i.gather(1, j)
        best_s, best_i = best_s.cpu().numpy(), best_i.cpu().numpy()
        return [(best_s[q], best_i[q]) for q in range(n_queries)]

    def candidate_counts(self, Q, k=10):
        """Count the documents a search of each query reaches and scores exactly.

        Parameters
        ----------
        Q : array-like
            As in :meth:`search`.
        k : int, default=10
            As in :meth:`search` (``n_candidates`` is at least ``k``).

        Returns
        -------
        counts : ndarray of shape (n_queries, 2), int64
            Column 0: the documents of the probed cells (the candidates, which
            get the approximate score); column 1: the documents scored exactly.
            Both are the number of documents in exhaustive search.
        """
        self._check_built()
        self._check_search(k)
        _, qindex, tokens = self._queries(Q)
        n_queries = int(qindex.max()) + 1
        if self._exhaustive():
            return np.full((n_queries, 2), self._ids.size, dtype=np.int64)
        from sklearn_ext.utils._torch import cpu_thread_limit

        out = np.empty((n_queries, 2), dtype=np.int64)
        with cpu_thread_limit():
            ctx = self._torch()
            for q in range(n_queries):
                Qq = ctx[0].from_numpy(tokens[qindex == q]).to(ctx[1])
                probed, kept = self._candidates(ctx, Qq, k)
                out[q] = len(probed), len(kept)
        return out

    def scores(self, Q):
        """Exact MaxSim scores of every query against every indexed document.

        Parameters
        ----------
        Q : array-like of shape (n_query_tokens, n_dims + 1) or (n_query_tokens, n_dims)
            Query tokens, the query id (an integer) in column 0, or one
            query's tokens without an id column.

        Returns
        -------
        query_ids : ndarray of shape (n_queries,) or None
            The sorted distinct query ids: the rows of ``scores`` (None for a
            query without an id column).
        scores : ndarray of shape (n_queries, n_documents), float32
            Columns in the order of ``doc_ids_``.
        """
        self._check_built()
        query_ids, qindex, tokens = self._queries(Q)
        from sklearn_ext.utils._torch import cpu_thread_limit

        n_queries = int(qindex.max()) + 1
        out = np.empty((n_queries, self._ids.size), dtype=np.float32)
        with cpu_thread_limit():
            ctx = self._torch()
            Qt = ctx[0].from_numpy(tokens).to(ctx[1])
            qt = ctx[0].from_numpy(qindex).to(ctx[1])
            everything = np.arange(self._ids.size)
            for b0, b1, s in self._exact(ctx, Qt, qt, n_queries, everything):
                out[:, b0:b1] = s.cpu().numpy()
        return query_ids, out

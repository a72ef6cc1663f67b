"""Array backends of the graph-guided solvers: numpy (CPU) and torch (GPU).

Both expose the same small set of operations, so that the solvers of
``_graph_guided_solver.py`` run the very same iterations on either. The numpy
backend computes in float64; the torch one in float32 on its device, with the
features, targets and sample weights copied there once. torch is imported only
when a torch backend is built.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy import sparse

__all__: list = []

# Incidence matrices of at most this many entries (edges x tasks) are dense.
_DENSE_INCIDENCE = 1 << 16


class _NumpyOps:
    name = "numpy"
    dtype = np.float64

    def __init__(self, problem=None):
        """Array operations in numpy; with a problem, also its data and graph."""
        if problem is None:
            return
        self._problem = problem
        self._y = problem.y
        self._w = problem.sample_weight
        m, T = len(problem.src), problem.n_tasks
        rows = np.repeat(np.arange(m), 2)
        cols = np.column_stack([problem.src, problem.dst]).ravel()
        vals = np.tile([1.0, -1.0], m)
        self._D = sparse.csr_matrix((vals, (rows, cols)), shape=(m, T))
        if m * T <= _DENSE_INCIDENCE:
            # small graphs: a dense product beats scipy.sparse's call overhead
            self._D = self._D.toarray()
            self._DT = np.ascontiguousarray(self._D.T)
        else:
            self._DT = self._D.T.tocsr()

    def asarray(self, a, dtype=None):
        return np.asarray(a, dtype=dtype or self.dtype)

    def index(self, a):
        return np.asarray(a, dtype=np.intp)

    def features(self, rows):
        """Feature rows (dense, or CSR for sparse X), centred and scaled.

        ``rows`` is an index array, or a slice for a contiguous chunk.
        """
        return self._problem.feature_rows(rows)

    def targets(self, rows):
        return self._y[rows]

    def weights(self, rows):
        """Sample weights of the rows, or None without weights."""
        return None if self._w is None else self._w[rows]

    def zeros(self, shape):
        return np.zeros(shape, dtype=self.dtype)

    def to_numpy(self, a):
        return np.array(a, dtype=np.float64)

    einsum = staticmethod(np.einsum)

    @staticmethod
    def sum_sq(a):
        return float(np.vdot(a, a))

    @staticmethod
    def row_norms(a):
        return np.sqrt(np.einsum("ij,ij->i", a, a))

    @staticmethod
    def soft_threshold(a, thr):
        return np.sign(a) * np.maximum(np.abs(a) - thr, 0.0)

    @staticmethod
    def minimum(a, b):
        return np.minimum(a, b)

    @staticmethod
    def logaddexp0(z):
        return np.logaddexp(0.0, z)

    @staticmethod
    def sigmoid(z):
        return 0.5 * (1.0 + np.tanh(0.5 * z))

    @staticmethod
    def logsumexp(z):
        zmax = z.max(axis=-1, keepdims=True)
        return np.log(np.exp(z - zmax).sum(axis=-1)) + zmax[..., 0]

    @staticmethod
    def softmax(z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    @staticmethod
    def take_along(z, idx):
        return np.take_along_axis(z, idx[..., None], axis=-1)[..., 0]

    @staticmethod
    def arange(n):
        return np.arange(n)

    def D(self, W):
        return self._D @ W

    def DT(self, Y):
        return self._DT @ Y

    @staticmethod
    def scatter_edges(Z, s, q, delta):
        """``Z`` with ``delta`` added at the rows ``s`` and taken at ``q``.

        The edges are node-disjoint (one round): no row appears twice.
        """
        Z[s] += delta
        Z[q] -= delta
        return Z


class _TorchOps:
    name = "torch"

    def __init__(self, problem, device):
        from sklearn_ext.utils._torch import import_torch

        self.torch = torch = import_torch()
        self.device = device
        self.dtype = torch.float32
        # The features and targets go to the device once; iterations index there.
        self._X = torch.zeros((problem.X.shape[0], problem.n_features), device=device)
        # (sparse X is made dense there, chunk by chunk).
        for start in range(0, problem.X.shape[0], 65536):
            chunk = problem.feature_rows(slice(start, start + 65536))
            if sparse.issparse(chunk):
                chunk = chunk.toarray()
            self._X[start : start + len(chunk)] = torch.tensor(chunk, dtype=self.dtype)
        ydtype = torch.int64 if problem.loss == "softmax" else self.dtype
        self._y = torch.tensor(problem.y, dtype=ydtype, device=device)
        self._w = (
            None
            if problem.sample_weight is None
            else torch.tensor(problem.sample_weight, dtype=self.dtype, device=device)
        )
        self._src = torch.as_tensor(problem.src, device=device)
        self._dst = torch.as_tensor(problem.dst, device=device)
        self._T = problem.n_tasks

    def asarray(self, a, dtype=None):
        return self.torch.tensor(
            np.asarray(a), dtype=dtype or self.dtype, device=self.device
        )

    def index(self, a):
        return self.torch.as_tensor(np.asarray(a, dtype=np.int64), device=self.device)

    def features(self, rows):
        return self._X[rows]

    def targets(self, rows):
        return self._y[rows]

    def weights(self, rows):
        return None if self._w is None else self._w[rows]

    def zeros(self, shape):
        return self.torch.zeros(shape, dtype=self.dtype, device=self.device)

    def to_numpy(self, a):
        return a.detach().cpu().numpy().astype(np.float64)

    def einsum(self, spec, *args):
        return self.torch.einsum(spec, *args)

    def sum_sq(self, a):
        return float((a * a).sum())

    def row_norms(self, a):
        return self.torch.linalg.vector_norm(a, dim=1)

    def soft_threshold(self, a, thr):
        return self.torch.sign(a) * self.torch.clamp_min(a.abs() - thr, 0.0)

    def minimum(self, a, b):
        """Elementwise minimum of a float ``a`` and a tensor ``b``."""
        return self.torch.clamp_max(b, a)

    def logaddexp0(self, z):
        return self.torch.nn.functional.softplus(z)

    def sigmoid(self, z):
        return self.torch.sigmoid(z)

    def logsumexp(self, z):
        return self.torch.logsumexp(z, dim=-1)

    def softmax(self, z):
        return self.torch.softmax(z, dim=-1)

    def take_along(self, z, idx):
        return self.torch.take_along_dim(z, idx[..., None], dim=-1)[..., 0]

    def arange(self, n):
        return self.torch.arange(n, device=self.device)

    def D(self, W):
        return W[self._src] - W[self._dst]

    def DT(self, Y):
        out = self.torch.zeros((self._T, *Y.shape[1:]), dtype=Y.dtype, device=Y.device)
        out.index_add_(0, self._src, Y)
        out.index_add_(0, self._dst, -Y)
        return out

    @staticmethod
    def scatter_edges(Z, s, q, delta):
        Z.index_add_(0, s, delta)
        Z.index_add_(0, q, -delta)
        return Z

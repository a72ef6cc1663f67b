"""Batched barrier solver for l2-robust linear programs.

``min_w c_r^T w + ||s_r * w||_2`` over one polytope
``{A_ub w <= b_ub, A_eq w = b_eq, lower <= w <= upper}`` for many rows
``(c_r, s_r)`` at once: a log-barrier interior-point method whose Newton
steps are batched over the rows in NumPy. The polytope is shared, so its
equality constraints are eliminated once (``w = w0 + N z`` with ``N`` an
orthonormal basis of their null space and ``w0`` a strictly interior point
found by one linear program); every row then solves, in ``(z, t)``,

    min  c~^T z + t   s.t.  ||a + B z|| <= t,  G~ z <= h~,

with ``a = s * w0``, ``B = diag(s) N``, ``G~ = G N`` and ``h~ = h - G w0 > 0``,
by Newton's method on ``tau (c~^T z + t) - sum log(h~ - G~ z)
- log(t^2 - ||a + B z||^2)`` for ``tau`` growing geometrically. On the
central path the duality gap is ``theta / tau`` (``theta`` the number of
inequalities plus 2 for the cone), so the objective is within
``theta / tau`` of the optimum when the Newton steps have converged.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.linalg import null_space
from scipy.optimize import linprog

__all__ = ["PolytopeBarrier"]

_TAU_GROWTH = 20.0
_OUTER_STEPS = 40
_NEWTON_STEPS = 60
_ROW_CHUNK = 4096


class PolytopeBarrier:
    """The shared polytope of a :class:`LinearProblem`, ready for batched solves.

    Parameters
    ----------
    A_ub, b_ub, A_eq, b_eq : ndarray or None
    lower, upper : ndarray of shape (n,)
        Bounds, infinite where absent.

    Attributes
    ----------
    interior : bool
        Whether the polytope has a point strictly inside its inequalities (in
        the affine hull of its equalities); without one the barrier cannot
        start and the caller must use another solver.
    """

    def __init__(self, A_ub, b_ub, A_eq, b_eq, lower, upper):
        n = lower.size
        fixed = lower == upper
        G_rows, h_rows = [], []
        if A_ub is not None:
            G_rows.append(A_ub)
            h_rows.append(b_ub)
        up = np.isfinite(upper) & ~fixed
        low = np.isfinite(lower) & ~fixed
        eye = np.eye(n)
        G_rows += [eye[up], -eye[low]]
        h_rows += [upper[up], -lower[low]]
        G = np.vstack(G_rows) if G_rows else np.zeros((0, n))
        h = np.concatenate(h_rows) if h_rows else np.zeros(0)
        E_rows, e_rows = [], []
        if A_eq is not None:
            E_rows.append(A_eq)
            e_rows.append(b_eq)
        E_rows.append(eye[fixed])
        e_rows.append(lower[fixed])
        E, e = np.vstack(E_rows), np.concatenate(e_rows)
        self.n = n
        self.interior = False
        w0 = self._chebyshev_centre(G, h, E, e)
        if w0 is None:
            return
        self.w0 = w0
        self.N = null_space(E) if E.shape[0] else np.eye(n)
        self.G = G @ self.N  # G~
        self.h = h - G @ w0  # h~ > 0
        self.theta = G.shape[0] + 2.0
        self.interior = True

    @staticmethod
    def _chebyshev_centre(G, h, E, e):
        """A point with every inequality slack at least ``r > 0``, or None."""
        n = G.shape[1]
        norms = np.linalg.norm(G, axis=1)
        # max r  s.t.  G w + r |g_i| <= h,  E w = e,  r <= 1.
        c = np.zeros(n + 1)
        c[-1] = -1.0
        A_ub = np.hstack([G, norms[:, None]]) if G.shape[0] else None
        A_eq = np.hstack([E, np.zeros((E.shape[0], 1))]) if E.shape[0] else None
        res = linprog(
            c,
            A_ub=A_ub,
            b_ub=h if G.shape[0] else None,
            A_eq=A_eq,
            b_eq=e if E.shape[0] else None,
            bounds=[(None, None)] * n + [(0, 1)],
            method="highs",
        )
        if res.status != 0 or res.x[-1] <= 1e-9:
            return None
        return res.x[:n]

    def solve(self, C, S, shape=None, tol=1e-9):
        """Decisions (n_rows, n) and a mask of the rows whose solve converged.

        Row ``r`` minimises ``C[r]^T w + ||M^T (S[r] * w)||_2`` over the
        polytope, ``M`` the ``shape`` matrix (the identity when None).
        """
        W = np.empty(C.shape)
        ok = np.empty(C.shape[0], dtype=bool)
        for start in range(0, C.shape[0], _ROW_CHUNK):
            rows = slice(start, start + _ROW_CHUNK)
            W[rows], ok[rows] = self._solve_chunk(C[rows], S[rows], shape, tol)
        return W, ok

    def _solve_chunk(self, C, S, shape, tol):
        N, G = self.N, self.G
        R, k = C.shape[0], N.shape[1]
        c = C @ N  # (R, k)
        a = S * self.w0  # (R, n)
        B = S[:, :, None] * N[None]  # (R, n, k)
        if shape is not None:  # v = M^T (s * w)
            a = a @ shape
            B = np.einsum("ji,rjk->rik", shape, B)
        BtB = np.einsum("rnk,rnl->rkl", B, B)
        GG = (G[:, :, None] * G[:, None, :]).reshape(G.shape[0], k * k)
        data = (c, a, B, BtB, GG)
        z = np.zeros((R, k))
        t = np.sqrt(np.einsum("rn,rn->r", a, a)) + 1.0
        scale = np.abs(C @ self.w0) + t
        tau = np.ones(R)
        converged = np.ones(R, dtype=bool)
        outer = np.arange(R)
        for _ in range(_OUTER_STEPS):  # tau grows until the gap is below tol
            i = outer
            last = np.zeros(0)
            for _ in range(_NEWTON_STEPS):
                if not i.size:
                    break
                H, g, r, q, Btv = self._system(data, i, z[i], t[i], tau[i])
                step = -np.linalg.solve(H, g[:, :, None])[..., 0]
                decrement = -np.einsum("rk,rk->r", g, step)
                # Damped Newton on a self-concordant function: the step
                # 1 / (1 + lambda) stays in the domain and decreases it; a full
                # step once lambda < 1/4 (quadratic convergence). A guard keeps
                # the slacks and the cone positive against round-off.
                lam = np.sqrt(np.maximum(decrement, 0.0))
                alpha = np.where(lam < 0.25, 1.0, 1.0 / (1.0 + lam))
                limit = self._max_step(r, q, t[i], Btv, step, BtB[i])
                alpha = np.minimum(alpha, 0.99 * limit)
                z[i] += alpha[:, None] * step[:, :k]
                t[i] += alpha * step[:, k]
                keep = decrement > 1e-10
                i, last = i[keep], decrement[keep]
            # Not centred within the Newton budget: a point far from the
            # central path would void the duality-gap certificate. (Round-off
            # keeps the decrement above 1e-10 at large tau, so a nearly
            # centred point, lambda^2 <= 1e-6, passes.)
            if i.size:
                converged[i[last > 1e-6]] = False
            finished = self.theta / tau[outer] <= tol * scale[outer]
            outer = outer[~finished]
            if not outer.size:
                break
            tau[outer] *= _TAU_GROWTH
        converged[outer] = False
        converged &= np.isfinite(z).all(1) & np.isfinite(t)
        return self.w0 + z @ N.T, converged

    def _system(self, data, i, z, t, tau):
        """Newton system ``(H, g)`` of rows ``i``, with their slacks."""
        c, a, B, BtB, GG = data
        G, h = self.G, self.h
        k = z.shape[1]
        r = h - z @ G.T
        # v = a + B z formed explicitly: ||v||^2 from its expansion cancels
        # when v is small against a.
        v = a[i] + np.einsum("rnk,rk->rn", B[i], z)
        Btv = np.einsum("rnk,rn->rk", B[i], v)
        norm_v = np.sqrt(np.einsum("rn,rn->r", v, v))
        q = (t - norm_v) * (t + norm_v)
        inv_r = 1.0 / r
        q2 = q * q
        H = np.empty((i.size, k + 1, k + 1))
        H[:, :k, :k] = (
            ((inv_r * inv_r) @ GG).reshape(-1, k, k)
            + 2 * BtB[i] / q[:, None, None]
            + 4 * Btv[:, :, None] * Btv[:, None, :] / q2[:, None, None]
        )
        H[:, :k, k] = H[:, k, :k] = -4 * t[:, None] * Btv / q2[:, None]
        H[:, k, k] = -2 / q + 4 * t * t / q2
        g = np.empty((i.size, k + 1))
        g[:, :k] = tau[:, None] * c[i] + inv_r @ G + 2 * Btv / q[:, None]
        g[:, k] = tau - 2 * t / q
        return H, g, r, q, Btv

    def _max_step(self, r, q, t, Btv, step, BtB):
        """Largest step along ``(d, dt)`` keeping the slacks and the cone positive."""
        d, dt = step[:, :-1], step[:, -1]
        Gd = d @ self.G.T
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            linear = np.where(Gd > 0, r / Gd, np.inf).min(1, initial=np.inf)
            # t(alpha)^2 - ||v(alpha)||^2 = q + b1 alpha + b2 alpha^2, q > 0.
            b1 = 2 * (t * dt - np.einsum("rk,rk->r", Btv, d))
            b2 = dt * dt - np.einsum("rk,rkl,rl->r", d, BtB, d)
            disc = b1 * b1 - 4 * b2 * q
            root = np.sqrt(np.maximum(disc, 0.0))
            quadratic = np.where(
                b2 < 0,
                (-b1 - root) / (2 * b2),
                np.where((disc >= 0) & (b1 < 0), (-b1 - root) / (2 * b2), np.inf),
            )
            first = np.where(b1 < 0, -q / b1, np.inf)
            cone = np.where(np.abs(b2) < 1e-300, first, quadratic)
            cone = np.where(cone > 0, cone, np.inf)
        return np.minimum(linear, cone)

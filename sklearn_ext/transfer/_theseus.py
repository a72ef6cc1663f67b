"""TaskVectorTransporter: Theseus, training-free transport of task vectors."""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real

import numpy as np
from scipy.linalg import block_diag
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from sklearn_ext.transfer._graph import (
    GraphSpec,
    graph_io,
    layer_designs,
    stack_reads,
)
from sklearn_ext.transfer._maps import (
    alignment_map,
    matching_grams,
    ridge_from_grams,
    ridge_matching,
)
from sklearn_ext.transfer._models import (
    _named_tensors,
    as_update,
    check_task_vector,
    describe,
    describe_graph,
    is_chain,
    linear_io,
    parameters,
    state_dict,
    with_update,
)
from sklearn_ext.utils._messages import warn
from sklearn_ext.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
    validate_data,
)

__all__ = ["TaskVectorTransporter"]

ALIGNS = ("procrustes", "functional", "lstsq", "hungarian", "truncate", "random")
OUTPUTS = ("update", "model", "state_dict")
# The aligns that refit each layer's update by least squares.
_FITTED = ("functional", "lstsq")


def _stream(io, k, center=False):
    """Rows on which hidden space ``k`` (read by linear layer ``k``) is aligned.

    The activations the next layer reads, with the pre-activations as the
    tie-break (:func:`~sklearn_ext.transfer._graph.stack_reads`); with
    ``center``, each block minus its column means (cross-covariances instead
    of second moments).
    """
    post, pre = io[k][0], io[k - 1][1]
    if center:
        post, pre = post - post.mean(axis=0), pre - pre.mean(axis=0)
    return stack_reads([(None, post, 1.0), (None, pre, None)])


class TaskVectorTransporter(BaseEstimator):
    """Move a task vector from one MLP to another of different widths (Theseus).

    A task vector is what fine-tuning added to a base model's parameters.
    Theseus moves it to a second base model, trained on the same data but of
    different hidden widths, without training: both bases read a few
    calibration rows, every hidden space of the source is aligned to the
    target's by orthogonal Procrustes on those activations, and each linear
    layer's update is carried through the maps of its input and output spaces
    (``dW_B = T_out.T @ dW_A @ T_in``, ``db_B = db_A @ T_out``). The input and
    output spaces are shared (same features, same outputs), so their maps are
    the identity; the models must therefore have the same number of linear
    layers, the same input width and the same output width.

    Parameters
    ----------
    alpha : float, default=1.0
        The scale of the transported update that :meth:`apply` adds to the
        target (``target + alpha * update``). A transported update is a
        projection of the source's, so a value above 1 often helps; choose it
        on held-out data of the task.
    align : {"procrustes", "functional", "lstsq", "hungarian", "truncate", \
            "random"}, default="procrustes"
        How units correspond. ``"procrustes"``: the semi-orthogonal map that
        best takes the source's activations to the target's (Theseus).
        ``"functional"``: the Procrustes maps, then each layer's update refit
        to the source update's effect on the calibration activations (as
        ``"lstsq"``), shrunk towards the Procrustes-moved update instead of
        towards zero: ``ridge`` sets the pull (a large one keeps the
        Procrustes-moved weights, zero gives ``"lstsq"``; biases are refit
        freely in both; ``ridge=0.1`` was set on development data of the
        benchmark's CNN and transformer pairs).
        ``"lstsq"``: each layer's update is the ridge least-squares fit of the
        source update's effect on the calibration activations (functional
        matching without the orthogonal constraint; output spaces still
        aligned by Procrustes). In a traced model this covers linear layers,
        convolutions (fitted on their input patches) and an attention's
        projections; embeddings, learned positions and per-channel
        parameters move through the Procrustes maps. ``"hungarian"``: a
        one-to-one matching of units by activation correlation (Git Re-Basin
        style).
        ``"truncate"``: unit i to unit i (truncation or zero padding).
        ``"random"``: a random semi-orthogonal map (a control).
    whiten : float in [0, 0.5], default=0.0
        Procrustes on ``GA^-w HA.T HB GB^-w`` (``G`` the activation Grams):
        0 aligns raw activations, 0.5 aligns whitened ones.
    ridge : float, default=1e-3
        Shrinkage of the Grams towards a multiple of the identity, relative to
        their mean eigenvalue, for ``whiten > 0``; for ``align="lstsq"`` and
        ``"functional"``, the weight of the penalty on the refit update
        (its distance to zero, or to the Procrustes-moved update).
    center : bool, default=False
        Align on centred activations (each unit minus its mean over the
        calibration rows): the maps then come from cross-covariances, not
        raw second moments, so that a unit's mean level does not count as
        agreement (the authors' centring option).
    random_state : int, RandomState instance or None, default=None
        Seeds ``align="random"``.

    Attributes
    ----------
    maps_ : list of ndarray
        One ``(a_k, b_k)`` map per representation space, from the input
        (identity) through every hidden space to the output (identity):
        ``target_units ~ source_units @ maps_[k]``.
    source_widths_ : tuple of int
        The source's widths, input to output.
    target_widths_ : tuple of int
        The target's widths.
    n_features_in_ : int
        Columns of the calibration rows.
    dropped_ : list of str
        Source parameters with no counterpart in the target (a block the
        target lacks, for traced models): their update is not moved, and
        ``fit`` warns. Empty for chains.

    See Also
    --------
    task_vector : The task vector of a fine-tuned model.

    Notes
    -----
    A model is a torch ``nn.Sequential`` of ``nn.Linear`` layers and
    element-wise activations, a fitted sklearn_ext estimator whose
    ``module_`` is one (its ``_module_inputs`` preprocessing is applied to
    the calibration rows), or a fitted scikit-learn ``MLPClassifier`` /
    ``MLPRegressor``. Any other torch model (convolutions, skip connections,
    layer or batch norm; also a :class:`FunctionalModel`) is traced with
    ``torch.fx`` and its channel spaces are aligned instead (see
    ``sklearn_ext/transfer/_graph.py`` and the user guide); ``maps_`` then
    holds one map per channel space, in order of first appearance, and
    ``source_widths_`` / ``target_widths_`` their widths. A hidden space is
    aligned on what the next linear layer reads (the activation's output),
    and that one map carries both the update of the layer that writes the
    space and of the layer that reads it
    (on digits this closed more of the gap than maps fitted on
    pre-activations, or one map per side). Both bases must compute comparable
    functions (trained on the same data): maps between unrelated models are
    arbitrary.
    With fewer calibration rows than hidden units the alignment is
    underdetermined and a warning says so.

    The transporter is a scikit-learn estimator (parameters, ``clone``,
    pickling, parameter validation) but not a data transformer:
    :meth:`transform` moves a task vector (a dict of parameter updates), not
    rows, and :meth:`fit` needs the two base models beside the calibration
    rows. It therefore sets no transformer tags and skips scikit-learn's data
    checks (the ``_skip_test`` tag), which fit on generated tables without
    models and transform rows; ``tests/test_family_contracts.py`` checks the
    parts of the contract that apply (clone, parameter validation, pickling in
    a fresh process, skops, ``set_params`` then ``fit``, bad input).

    References
    ----------
    .. [1] F. Rinaldi, A. Panariello, G. Salici, A. Porrello, S. Calderara,
       "Transporting Task Vectors across Different Architectures without
       Training", ICML 2026, arXiv:2602.12952.

    Examples
    --------
    >>> import torch
    >>> from sklearn_ext.transfer import TaskVectorTransporter, task_vector
    >>> _ = torch.manual_seed(0)
    >>> net = torch.nn.Sequential(
    ...     torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    >>> perm = torch.randperm(8)
    >>> twin = torch.nn.Sequential(
    ...     torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    >>> with torch.no_grad():
    ...     _ = twin[0].weight.copy_(net[0].weight[perm])
    ...     _ = twin[0].bias.copy_(net[0].bias[perm])
    ...     _ = twin[2].weight.copy_(net[2].weight[:, perm])
    ...     _ = twin[2].bias.copy_(net[2].bias)
    >>> X = torch.randn(100, 4).numpy()
    >>> theseus = TaskVectorTransporter().fit(X, source_base=net, target_base=twin)
    >>> bool((theseus.maps_[1].argmax(axis=1) == perm.argsort().numpy()).all())
    True
    """

    _parameter_constraints: dict = {
        "alpha": [Real],
        "align": [StrOptions(set(ALIGNS))],
        "whiten": [Interval(Real, 0, 0.5, closed="both")],
        "ridge": [Interval(Real, 0, None, closed="left")],
        "center": ["boolean"],
        "random_state": ["random_state"],
    }

    _paper = (
        "Theseus: transporting task vectors across widths without training, ICML 2026"
    )
    _bench_name = "theseus"
    _not_a_data_estimator = (
        "fit takes two base models beside the calibration rows, and transform "
        "moves a task vector (a dict of parameter updates), not rows: "
        "scikit-learn's data checks do not apply; tests/test_family_contracts.py "
        "checks clone, parameter validation, pickling, skops, set_params and "
        "bad input"
    )

    def __init__(
        self,
        *,
        alpha=1.0,
        align="procrustes",
        whiten=0.0,
        ridge=1e-3,
        center=False,
        random_state=None,
    ):
        self.alpha = alpha
        self.align = align
        self.whiten = whiten
        self.ridge = ridge
        self.center = center
        self.random_state = random_state

    def __sklearn_tags__(self):
        # Not a transformer of rows (see the class notes): no transformer tags,
        # and outside scikit-learn's data checks.
        tags = super().__sklearn_tags__()
        tags._skip_test = True
        return tags

    @classmethod
    def _get_test_params(cls):
        return {"random_state": 0}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, source_base, target_base):
        """Align the bases' hidden spaces on calibration rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Calibration rows, as both bases read them (raw rows for a fitted
            estimator, whose own preprocessing is applied). A few hundred
            rows of the task's inputs suffice; labels are not needed.
        y : None
            Ignored.
        source_base : model
            The model the task vector was fine-tuned from.
        target_base : model
            The model to move the task vector to.

        Returns
        -------
        self : TaskVectorTransporter
            Fitted transporter.
        """
        if is_chain(source_base) and is_chain(target_base):
            source, target = self._fit_chains(X, source_base, target_base)
        else:
            source, target = self._fit_graphs(X, source_base, target_base)
        self._source, self._target = source, target
        self.source_widths_ = tuple(source.widths)
        self.target_widths_ = tuple(target.widths)
        # transform(model) takes a task vector against the source base, and
        # output="state_dict" adds the update to the target base's state. Both
        # are kept as arrays, not models, so that the transporter persists
        # with skops and holds no copy of the caller's network.
        self._source_params = parameters(source_base, source)
        self._target_state = {
            k: np.array(v, copy=True)
            for k, v in state_dict(target_base, target).items()
        }
        return self

    def _fit_graphs(self, X, source_base, target_base):
        """Trace both bases and align every channel space (see ``_graph``)."""
        X = validate_data(
            self, X, dtype=np.float64, ensure_min_samples=2, allow_nd=True
        )
        source, gm_a, in_a = describe_graph(source_base, "source_base", X)
        target, gm_b, in_b = describe_graph(target_base, "target_base", X)
        pairs, dropped, fresh, space_map, op_map = _match_graphs(source, target)
        if dropped:
            warn(
                f"the target has no counterpart for the source's {dropped} (a "
                "block the target lacks): their updates are not moved."
            )
        reads_a = graph_io(gm_a, in_a, source)
        reads_b = graph_io(gm_b, in_b, target)
        rng = check_random_state(self.random_state)
        method = "procrustes" if self.align in _FITTED else self.align
        maps = []
        for space, width in enumerate(source.widths):
            if space not in space_map:  # only in a block the target lacks
                maps.append(None)
                continue
            if source.fixed[space]:
                maps.append(np.eye(width))
                continue
            # The reads of the space that both models make (same operation).
            partner = {key: rows for key, rows, _ in reads_b[space_map[space]]}
            paired = [
                (key, rows, weight, partner[(op_map[key[0]], *key[1:])])
                for key, rows, weight in reads_a[space]
                if key[0] in op_map and (op_map[key[0]], *key[1:]) in partner
            ]
            for key, ra, _, rb in paired:
                if len(ra) != len(rb):
                    op = source.signature[key[0]]
                    raise ValueError(
                        "source_base and target_base do not correspond: at "
                        f"operation {key[0]} ({op[0]}) they give {len(ra)} and "
                        f"{len(rb)} rows of channels (a different stride, "
                        "padding or input size), so their channels cannot be "
                        "matched row by row."
                    )
            if self.center:  # each block centred, as for chains
                paired = [
                    (k, ra - ra.mean(axis=0), w, rb - rb.mean(axis=0))
                    for k, ra, w, rb in paired
                ]
            HA = stack_reads([(k, ra, w) for k, ra, w, _ in paired])
            HB = stack_reads([(k, rb, w) for k, _, w, rb in paired])
            if len(HA) < max(HA.shape[1], HB.shape[1]):
                warn(
                    f"{len(HA)} activation rows for a space of up to "
                    f"{max(HA.shape[1], HB.shape[1])} channels: the alignment is "
                    "underdetermined; pass more calibration rows."
                )
            # An attention's queries/keys or values: one map per head, the
            # heads kept apart (block diagonal).
            heads = source.heads[space] if source.heads else 1
            a, b = HA.shape[1] // heads, HB.shape[1] // heads
            maps.append(
                block_diag(
                    *(
                        alignment_map(
                            HA[:, h * a : (h + 1) * a],
                            HB[:, h * b : (h + 1) * b],
                            method,
                            whiten=self.whiten,
                            ridge=self.ridge,
                            random_state=rng,
                        )
                        for h in range(heads)
                    )
                )
            )
        self.maps_ = maps
        self._inputs = None
        self._pairs, self._fresh, self.dropped_ = pairs, fresh, dropped
        self._grams = (
            _layer_grams(source, target, gm_a, in_a, gm_b, in_b, pairs)
            if self.align in _FITTED
            else None
        )
        return source, target

    def _fit_chains(self, X, source_base, target_base):
        """Align the hidden spaces of two chains of linear layers."""
        source = describe(source_base, "source_base")
        target = describe(target_base, "target_base")
        self._check_correspondence(source, target)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        for model, chain, role in (
            (source_base, source, "source_base"),
            (target_base, target, "target_base"),
        ):
            expected = (
                model.n_features_in_ if chain.kind == "estimator" else chain.widths[0]
            )
            if X.shape[1] != expected:
                raise ValueError(
                    f"The calibration rows have {X.shape[1]} columns; "
                    f"{role} reads {expected}."
                )
        hidden = max([*source.widths[1:-1], *target.widths[1:-1]], default=0)
        if X.shape[0] < hidden:
            warn(
                f"{X.shape[0]} calibration rows for hidden spaces of up to "
                f"{hidden} units: the alignment is underdetermined; pass at "
                "least as many rows as hidden units."
            )
        io_a = linear_io(source_base, source, X)
        io_b = linear_io(target_base, target, X)
        rng = check_random_state(self.random_state)
        n_layers = len(source.keys)
        maps = [np.eye(source.widths[0])]
        method = "procrustes" if self.align in _FITTED else self.align
        for k in range(1, n_layers):
            maps.append(
                alignment_map(
                    _stream(io_a, k, self.center),
                    _stream(io_b, k, self.center),
                    method,
                    whiten=self.whiten,
                    ridge=self.ridge,
                    random_state=rng,
                )
            )
        maps.append(np.eye(source.widths[-1]))
        self.maps_ = maps
        self._inputs = (
            [(a[0], b[0]) for a, b in zip(io_a, io_b)]
            if self.align in _FITTED
            else None
        )
        self.dropped_ = []
        self._grams = None
        return source, target

    @staticmethod
    def _check_correspondence(source, target):
        problems = []
        if len(source.keys) != len(target.keys):
            problems.append(
                f"{len(source.keys)} linear layers against {len(target.keys)}"
            )
        else:
            if source.widths[0] != target.widths[0]:
                problems.append(
                    f"input widths {source.widths[0]} and {target.widths[0]}"
                )
            if source.widths[-1] != target.widths[-1]:
                problems.append(
                    f"output widths {source.widths[-1]} and {target.widths[-1]}"
                )
            biased = [
                i
                for i, (a, b) in enumerate(zip(source.keys, target.keys))
                if (a[1] is None) != (b[1] is None)
            ]
            if biased:
                problems.append(f"a bias in one model only at layers {biased}")
            slopes = [
                [(space, size == 1) for _, space, size in chain.unit_params]
                for chain in (source, target)
            ]
            if slopes[0] != slopes[1]:
                problems.append(
                    "PReLU layers in different places or of different kinds "
                    "(one slope, or one per unit): "
                    f"{list(source.unit_params)} and {list(target.unit_params)}"
                )
        if problems:
            raise ValueError(
                "source_base and target_base do not correspond layer by layer: "
                + "; ".join(problems)
                + f" (widths {source.widths} and {target.widths})."
            )

    def transform(self, task_vector, *, output="update", target_base=None):
        """Move a task vector of the source to the target.

        Parameters
        ----------
        task_vector : dict or model
            ``{parameter name: update}`` shaped like the source's parameters,
            as :func:`task_vector` returns it (arrays or tensors); or the
            fine-tuned source model itself (same architecture as the source
            base), whose task vector is taken against the source base seen
            in ``fit``.
        output : {"update", "model", "state_dict"}, default="update"
            ``"update"``: the moved task vector. ``"state_dict"``: the target
            base's parameters as ``fit`` saw them plus ``alpha`` times the
            update: a module ``state_dict()`` (tensors) for torch models and
            estimators, to load with ``load_state_dict``;
            ``{"coefs_.<i>": ..., "intercepts_.<i>": ...}`` for scikit-learn
            MLPs. ``"model"``: a copy of ``target_base`` with ``alpha`` times
            the update added, as :meth:`apply` returns it (the transporter
            keeps no model, so pass the target base).
        target_base : model, default=None
            The target base, for ``output="model"`` only.

        Returns
        -------
        update : dict or model
            For ``"update"``, ``{parameter name: update}`` shaped like the
            target's parameters: float32 CPU tensors for torch models and
            estimators, float64 arrays for scikit-learn MLPs.
        """
        check_is_fitted(self, "maps_")
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}; got {output!r}.")
        source, target = self._source, self._target
        if not isinstance(task_vector, dict):
            task_vector = self._task_vector_of(task_vector)
        tv = check_task_vector(task_vector, source, "task_vector")
        if isinstance(source, GraphSpec):
            return self._finish(self._transport_graph(tv), output, target_base)
        out = {}
        for layer, ((wa, ba), (wb, bb)) in enumerate(zip(source.keys, target.keys)):
            dW = tv[wa].T if source.kind == "sklearn" else tv[wa]
            db = None if ba is None else tv[ba]
            T_in, T_out = self.maps_[layer], self.maps_[layer + 1]
            dW_b = T_out.T @ dW @ T_in
            db_b = None if db is None else db @ T_out
            if self._inputs is not None:
                XA, XB = self._inputs[layer]
                prior = dW_b if self.align == "functional" else None
                dW_b, db_b = ridge_matching(XA, XB, dW, db, T_out, self.ridge, prior)
            out[wb] = dW_b.T if target.kind == "sklearn" else dW_b
            if bb is not None:
                out[bb] = db_b
        for (name_a, space, size), (name_b, _, _) in zip(
            source.unit_params, target.unit_params
        ):
            # A shared slope is the same in any basis. One slope per unit
            # moves with the squared entries of the space's map: a unit's
            # share in each target unit (exact for a permutation).
            T = self.maps_[space]
            out[name_b] = tv[name_a] if size == 1 else tv[name_a] @ (T * T)
        return self._finish(out, output, target_base)

    def _transport_graph(self, tv):
        """Every parameter of a traced source moved through its spaces' maps
        (its layers' weights and biases then refit by least squares for
        ``align="lstsq"`` and ``"functional"``)."""
        out = {
            name: np.zeros(self._target.shapes[name]) for name in self._fresh
        }  # parameters of a block only the target has: not moved, zero update
        for name_a, role, args, name_b in self._pairs:
            d = tv[name_a]
            if role == "weight":
                out_space, in_space, repeat = args
                T_in = self.maps_[in_space]
                if repeat > 1:  # flattened (channel, position) features
                    T_in = np.kron(T_in, np.eye(repeat))
                out[name_b] = np.einsum(
                    "oi...,oO,iI->OI...", d, self.maps_[out_space], T_in
                )
            elif role == "bias":  # also embeddings and learned positions
                out[name_b] = d @ self.maps_[args[0]]
            elif role in ("qkv_weight", "qkv_bias"):
                T_qk, T_v = self.maps_[args[0]], self.maps_[args[1]]
                blocks = np.split(d, 3, axis=0)
                outs = [T.T @ blk for T, blk in zip((T_qk, T_qk, T_v), blocks)]
                if role == "qkv_weight":
                    outs = [o @ self.maps_[args[2]] for o in outs]
                out[name_b] = np.concatenate(outs, axis=0)
            else:  # per channel (or one shared value), as PReLU slopes in chains
                T = None if args[0] is None else self.maps_[args[0]]
                out[name_b] = d if T is None else d @ (T * T)
        if self._grams:
            self._refit_layers(tv, out)
        return out

    def _refit_layers(self, tv, out):
        """Replace the mapped update of every layer with Grams by its
        least-squares fit (shrunk towards the mapped one for
        ``align="functional"``, towards zero for ``"lstsq"``)."""
        names = {name_a: name_b for name_a, _, _, name_b in self._pairs}
        roles = {name_a: args for name_a, _, args, _ in self._pairs}
        anchored = self.align == "functional"
        for weight, (gram, cross) in self._grams.items():
            bias, _, kind = self._source.layers[weight]
            d, mapped = tv[weight], out[names[weight]]
            db = None if bias is None else tv[bias]
            if kind == "qkv":  # three projections of the stream, one Gram
                T_qk, T_v = (self.maps_[s] for s in roles[weight][:2])
                parts = [
                    ridge_from_grams(
                        gram, cross, w, b, T, self.ridge, prior if anchored else None
                    )
                    for w, b, T, prior in zip(
                        np.split(d, 3),
                        [None] * 3 if db is None else np.split(db, 3),
                        (T_qk, T_qk, T_v),
                        np.split(mapped, 3),
                    )
                ]
                dW_b = np.concatenate([p[0] for p in parts])
                db_b = None if db is None else np.concatenate([p[1] for p in parts])
            else:
                dW_b, db_b = ridge_from_grams(
                    gram,
                    cross,
                    d.reshape(len(d), -1),
                    db,
                    self.maps_[roles[weight][0]],
                    self.ridge,
                    mapped.reshape(len(mapped), -1) if anchored else None,
                )
                dW_b = dW_b.reshape(mapped.shape)
            out[names[weight]] = dW_b
            if bias is not None:
                out[names[bias]] = db_b

    def _finish(self, out, output, target_base):
        """The moved update as ``output`` asks."""
        target = self._target
        update = as_update(out, target)
        if output == "model":
            if target_base is None:
                raise ValueError(
                    'output="model" needs the target base: transform(..., '
                    'output="model", target_base=target_base).'
                )
            return self.apply(target_base, update)
        if target_base is not None:
            raise ValueError('target_base is used with output="model" only.')
        if output == "update":
            return update
        return self._updated_state(update)

    def _updated_state(self, update):
        """The target base's state (from ``fit``) plus ``alpha * update``."""
        alpha = float(self.alpha)
        state = {
            k: v + alpha * np.asarray(update[k]) if k in update else v.copy()
            for k, v in self._target_state.items()
        }
        if self._target.kind == "sklearn":
            return state
        import torch

        return {
            k: torch.as_tensor(v).to(torch.as_tensor(self._target_state[k]).dtype)
            for k, v in state.items()
        }

    def _task_vector_of(self, finetuned):
        """The task vector of a fine-tuned source model against the source base."""
        if isinstance(self._source, GraphSpec):
            _check_shapes(finetuned, self._source, "task_vector", "source base")
            tuned = parameters(finetuned, self._source)
            return {k: tuned[k] - self._source_params[k] for k in tuned}
        try:
            chain = describe(finetuned, "task_vector")
        except TypeError:
            raise TypeError(
                "task_vector must be a dict from parameter names to updates, or a "
                "fine-tuned model of the source base's architecture; got "
                f"{type(finetuned).__name__}."
            ) from None
        if chain != self._source:
            raise ValueError(
                "task_vector is a model, but not of the source base's "
                f"architecture: widths {chain.widths} against {self._source.widths}."
            )
        tuned = parameters(finetuned, chain)
        return {k: tuned[k] - self._source_params[k] for k in tuned}

    def apply(self, target_base, update):
        """A copy of the target with ``alpha * update`` added.

        Parameters
        ----------
        target_base : model
            The target base model (the one passed to :meth:`fit`, or one of the
            same architecture).
        update : dict
            A transported update, as :meth:`transform` returns it.

        Returns
        -------
        model : model
            A deep copy of ``target_base`` with the update added; the input
            model is left unchanged.
        """
        check_is_fitted(self, "maps_")
        if isinstance(self._target, GraphSpec):
            _check_shapes(target_base, self._target, "target_base", "fitted target")
            update = check_task_vector(update, self._target, "update")
            return with_update(target_base, self._target, update, float(self.alpha))
        chain = describe(target_base, "target_base")
        if chain.widths != self._target.widths or chain.keys != self._target.keys:
            raise ValueError(
                f"target_base has widths {chain.widths}; the transporter was "
                f"fitted for a target of widths {self._target.widths}."
            )
        update = check_task_vector(update, chain, "update")
        return with_update(target_base, chain, update, float(self.alpha))


def _layer_grams(source, target, gm_a, in_a, gm_b, in_b, pairs):
    """``{source weight: Grams}`` for the least-squares matching of every
    layer both traced models have (:func:`matching_grams` on what the two
    layers read for the same calibration rows)."""
    names = {name_a: name_b for name_a, _, _, name_b in pairs}
    designs_a = layer_designs(gm_a, in_a, source)
    designs_b = layer_designs(gm_b, in_b, target)
    grams = {}
    for weight, (bias, _, _) in source.layers.items():
        if weight not in names:  # in a block the target lacks
            continue
        XA, XB = designs_a[weight], designs_b[names[weight]]
        grams[weight] = matching_grams(XA, XB, bias is not None)
    return grams


def _check_shapes(model, spec, where, expected):
    """Raise unless ``model``'s parameters have the names and shapes of ``spec``."""
    try:
        named = _named_tensors(model, where)
    except TypeError:
        raise TypeError(
            f"{where} must be a dict from parameter names to updates, or a model "
            f"of the {expected}'s architecture; got {type(model).__name__}."
        ) from None
    shapes = {k: tuple(np.shape(v)) for k, v in named.items()}
    if shapes != spec.shapes:
        raise ValueError(
            f"{where} is not of the {expected}'s architecture: its parameters' "
            "names or shapes differ."
        )


_SPACE_ARGS = {"weight": 2, "qkv_weight": 3, "qkv_bias": 2}


def _kinds(signature):
    """What must agree between corresponding operations: the kind, and the
    kernel (convolutions), the heads (attention) or the shape (input, output)."""
    return [tuple(s) for s in signature]


def _match_graphs(source, target):
    """The correspondence of two traced bases, operation by operation.

    The two graphs are aligned as sequences (``difflib``): operations of the
    same kind in the same order correspond; an operation present in one
    model only (a block removed) is allowed when its neighbours still
    correspond, and a different operation in the same place is refused.
    Returns ``(pairs, dropped, fresh, space_map, op_map)``: the parameter
    pairs ``(name_a, role, args_a, name_b)``, the source parameters with no
    counterpart, the target parameters with none, the source-to-target
    space map and the operation map.
    """
    from difflib import SequenceMatcher

    sig_a, sig_b = _kinds(source.signature), _kinds(target.signature)
    names = [s[0] for s in sig_a], [s[0] for s in sig_b]
    problems = []
    for end in ("input", "output"):
        a = [s for s in sig_a if s[0] == end]
        b = [s for s in sig_b if s[0] == end]
        if a != b:
            problems.append(f"the {end} shapes differ: {a[0][1:]} and {b[0][1:]}")
    if problems:
        raise ValueError(
            "source_base and target_base do not correspond: "
            + "; ".join(problems)
            + "."
        )
    # Operations correspond by kind; a kernel or head count that differs is a
    # mismatch of corresponding operations, named below.
    matcher = SequenceMatcher(None, names[0], names[1], autojunk=False)
    op_map = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            op_map.update(zip(range(i1, i2), range(j1, j2)))
        elif tag == "replace":
            raise ValueError(
                "source_base and target_base do not correspond: their layer graphs "
                f"differ at operation {i1}: {names[0][i1]} and {names[1][j1]}."
            )
    for i, j in op_map.items():
        if sig_a[i] != sig_b[j] and sig_a[i][0] not in ("input", "output"):
            what = "heads" if sig_a[i][0] == "MultiheadAttention" else "kernels"
            raise ValueError(
                "source_base and target_base do not correspond: operation "
                f"{i} ({sig_a[i][0]}) has {what} {sig_a[i][1]} and {sig_b[j][1]}."
            )
    by_op_a, by_op_b = {}, {}
    for (name, role, args), op in zip(source.params, source.param_ops):
        by_op_a.setdefault(op, []).append((name, role, args))
    for (name, role, args), op in zip(target.params, target.param_ops):
        by_op_b.setdefault(op, []).append((name, role, args))
    pairs, dropped, space_map = [], [], {}
    matched_b = set()

    def tie(a, b, what):
        if (a is None) != (b is None):
            raise ValueError(
                "source_base and target_base do not correspond: " + what + " is "
                "per channel in one model and shared in the other."
            )
        if a is None:
            return
        if source.fixed[a] != target.fixed[b] or space_map.get(a, b) != b:
            raise ValueError(
                "source_base and target_base do not correspond: their skip "
                f"connections tie different spaces (at {what})."
            )
        space_map[a] = b

    for op, params_a in by_op_a.items():
        if op not in op_map:
            dropped += [name for name, _, _ in params_a]
            continue
        params_b = by_op_b.get(op_map[op], [])
        if [r for _, r, _ in params_a] != [r for _, r, _ in params_b]:
            raise ValueError(
                "source_base and target_base do not correspond: their parameters "
                f"differ at operation {op} (a bias in one model only)."
            )
        for (na, role, aa), (nb, _, ab) in zip(params_a, params_b):
            k = _SPACE_ARGS.get(role, 1)
            if role == "weight" and aa[2] != ab[2]:
                raise ValueError(
                    "source_base and target_base do not correspond: the flattened "
                    f"positions differ at {na!r}: {aa[2]} and {ab[2]}."
                )
            for sa, sb in zip(aa[:k], ab[:k]):
                tie(sa, sb, repr(na))
            pairs.append((na, role, aa, nb))
            matched_b.add(nb)
    fresh = [name for name, _, _ in target.params if name not in matched_b]
    return pairs, dropped, fresh, space_map, op_map

"""T-GINEE on multilayer networks: recovery, inference, peers, mouse connectomes, speed.

Part 1, peers on generated data. ``make_multilayer_network`` (200 nodes, 4
layers, rank 2, 3 communities, 2 dyad covariates, logit link) at layer
correlation 0 and 0.6; 10% of the dyads held out (whole dyads). Methods:
TGINEE with each working covariance; tensorly's CP (``parafac``, rank 2,
masked) of the adjacency tensor; per-layer adjacency spectral embedding (rank
2, ``scipy.sparse.linalg.eigsh``); statsmodels GEE (Binomial, exchangeable)
on the covariates alone, in long format. Metrics: held-out link AUC (mean over
layers), relative error of beta, community ARI (k-means on the node factors),
fit seconds.

Part 2, inference (100 repetitions, 100 nodes, 3 layers, layer correlation 0
and 0.6): coverage of the 95% sandwich intervals of beta, their mean width,
and the empirical standard deviation of beta over repetitions, for the
independence and exchangeable working covariances.

Part 2b, efficiency where the working covariance should matter: identity
link, half of the entries hidden at random, layer correlation 0, 0.6 and 0.9,
100 repetitions: the spread of beta under each working covariance.

Part 3, the 32 mouse DTI connectomes (``load_mice_connectomes``, 332 nodes)
as a 32-layer binary network (an edge is a non-zero weight), without
covariates for any method (the anatomical labels are what the factors are
scored against, so giving them as covariates would leak); 10% of the dyads
held out. Held-out AUC against the peers, and ARI of k-means (14 clusters)
on the node factors against the 14 hemisphere x block labels.
(``--mice-only`` runs it alone.)

Part 4, speed: fit seconds of TGINEE against tensorly's CP at 100, 300 and
1000 nodes with 10 layers (rank 2), and peak memory at 1000; one evaluation
of the GEE blocks at 32 layers with 10% of the entries missing at random
against complete data; one fit at 500 nodes x 8 layers against tensorly's CP
plus statsmodels' GEE.

Part 0, the working covariance (``--correlation-only`` runs it alone):
``make_multilayer_network`` (200 nodes, 4 layers, rank 2, logit link) at
layer correlation 0, 0.3, 0.6 and 0.9, with 0% or 30% of the training
entries hidden at random, 10% of the dyads held out; 10 seeds, paired. For
each working covariance: held-out link AUC, community ARI of the node
factors, relative error of beta, and the paired difference of AUC against
the independence fit with its 95% t interval.

Part 5, directed layers (``--directed-only`` runs it alone):
``make_multilayer_network(directed=True)`` (100 nodes, 4 layers, rank 2,
logit link, layer correlation 0.6), with ``asymmetric=True`` (each node
receives like the next community sends: flows from community k + 1 to k) and
without (a symmetric factor term on ordered dyads); 10% of the dyads held
out, 10 seeds paired. T-GINEE with ``directed=True`` against the undirected
fit and tensorly's masked CP of the (layers, senders, receivers) tensor:
held-out AUC, ARI of the senders' and of the receivers' factors against the
communities, and the paired AUC difference against the undirected fit.

Run ``python benchmarks/bench_tginee.py`` (``--parts correlation peers
inference efficiency mice directed speed``; ``--quick`` for a smoke run).
"""

import argparse
import time
import warnings

import numpy as np
from _common import measure, paired_interval, write_results
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score, roc_auc_score
from sklearn.model_selection import train_test_split

from sklearn_ext._claims import Claim, Ledger
from sklearn_ext.datasets import load_mice_connectomes, make_multilayer_network
from sklearn_ext.network import TGINEE, dyads_to_tensor, tensor_to_dyads

warnings.filterwarnings("ignore", category=ConvergenceWarning)
warnings.filterwarnings("ignore", category=RuntimeWarning)
COVS = ("independence", "exchangeable", "unstructured")


def _auc(Y, P):
    scores = []
    for k in range(Y.shape[1]):
        seen = ~np.isnan(Y[:, k])
        if len(np.unique(Y[seen, k])) == 2:
            scores.append(roc_auc_score(Y[seen, k], P[seen, k]))
    return float(np.mean(scores))


def _ari(labels, factors, k):
    pred = KMeans(k, n_init=10, random_state=0).fit_predict(factors)
    return adjusted_rand_score(labels, pred)


def _parafac(X_tr, Y_tr, n, rank, directed=False):
    """Masked CP of the training tensor: the tensor and the node-mode factors."""
    import tensorly as tl
    from tensorly.decomposition import parafac

    A = dyads_to_tensor(X_tr[:, :2], Y_tr, n, directed=directed)
    mask = ~np.isnan(A)
    cp = parafac(
        tl.tensor(np.nan_to_num(A)),
        rank,
        mask=tl.tensor(mask.astype(float)),
        init="random",
        n_iter_max=200,
        random_state=0,
    )
    full = tl.cp_to_tensor(cp)
    if directed:  # senders' and receivers' factors
        return full, (cp.factors[1], cp.factors[2])
    return full, cp.factors[1]


def _ase(X_tr, Y_tr, n, rank):
    """Per-layer adjacency spectral embedding of the training layers."""
    from scipy.sparse.linalg import eigsh

    A = np.nan_to_num(dyads_to_tensor(X_tr[:, :2], Y_tr, n))
    full, embeddings = np.empty_like(A), []
    for layer in range(A.shape[0]):
        vals, vecs = eigsh(A[layer], k=rank, which="LA")
        full[layer] = (vecs * vals) @ vecs.T
        embeddings.append(vecs * np.sqrt(np.abs(vals)))
    return full, np.hstack(embeddings)


def _from_tensor(full, X):
    i, j = X[:, 0].astype(int), X[:, 1].astype(int)
    return full[:, i, j].T


def _statsmodels_gee(X_tr, Y_tr, X_te, n_layers):
    """GEE on the covariates alone, long format, layer-specific coefficients."""
    import statsmodels.api as sm

    def long(X, Y=None):
        Z = np.hstack([X[:, 2:], np.ones((len(X), 1))])
        rows = np.kron(Z, np.eye(n_layers))  # one row per (dyad, layer)
        y = None if Y is None else Y.reshape(-1)
        return rows, y

    exog, endog = long(X_tr, Y_tr)
    keep = ~np.isnan(endog)
    groups = np.repeat(np.arange(len(X_tr)), n_layers)
    model = sm.GEE(
        endog[keep],
        exog[keep],
        groups=groups[keep],
        family=sm.families.Binomial(),
        cov_struct=sm.cov_struct.Exchangeable(),
    ).fit()
    exog_te, _ = long(X_te)
    pred = model.predict(exog_te).reshape(len(X_te), n_layers)
    q = X_tr.shape[1] - 1
    coef = model.params.reshape(q, n_layers).T  # (layer, covariate + intercept)
    return pred, coef[:, :-1]


def correlation_part(n, seeds, rhos=(0.0, 0.3, 0.6, 0.9), hidden=(0.0, 0.3)):
    """Does modelling the layers' correlation pay? Paired over seeds."""
    rows = []
    for rho in rhos:
        for frac in hidden:
            per = {cov: [] for cov in COVS}
            for seed in seeds:
                A, C, truth = make_multilayer_network(
                    n, 4, 2, layer_correlation=rho, random_state=seed
                )
                X, Y = tensor_to_dyads(A, C, random_state=seed)
                X_tr, X_te, Y_tr, Y_te = train_test_split(
                    X, Y, test_size=0.1, random_state=seed
                )
                Y_tr = Y_tr.copy()
                rng = np.random.RandomState(seed)
                Y_tr[rng.rand(*Y_tr.shape) < frac] = np.nan
                keep = ~np.isnan(Y_tr).all(1)
                for cov in COVS:
                    model = TGINEE(
                        2, dyad_columns=(0, 1), working_covariance=cov, random_state=0
                    )
                    start = time.perf_counter()
                    model.fit(X_tr[keep], Y_tr[keep])
                    seconds = time.perf_counter() - start
                    per[cov].append(
                        {
                            "auc": _auc(Y_te, model.predict(X_te)),
                            "ari": _ari(
                                truth.communities[model.nodes_],
                                model.node_factors_,
                                3,
                            ),
                            "beta": np.linalg.norm(model.coef_ - truth.coef)
                            / np.linalg.norm(truth.coef),
                            "seconds": seconds,
                            "rounds": model.n_iter_,
                        }
                    )
            base = [r["auc"] for r in per["independence"]]
            for cov in COVS:
                auc = [r["auc"] for r in per[cov]]
                diff, lo, hi = paired_interval(auc, base)
                rows.append(
                    {
                        "layer_correlation": rho,
                        "hidden entries": frac,
                        "working_covariance": cov,
                        "auc": f"{np.mean(auc):.4f}",
                        "auc - independence [95% CI]": (
                            "-"
                            if cov == "independence"
                            else f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                        ),
                        "community_ari": f"{np.mean([r['ari'] for r in per[cov]]):.3f}",
                        "beta_rel_error": (
                            f"{np.mean([r['beta'] for r in per[cov]]):.3f}"
                        ),
                        "fit_seconds": (
                            f"{np.mean([r['seconds'] for r in per[cov]]):.2f}"
                        ),
                        "rounds": f"{np.mean([r['rounds'] for r in per[cov]]):.0f}",
                    }
                )
            print(f"rho {rho}, hidden {frac} done", flush=True)
    return rows


def directed_part(n, seeds, rho=0.6):
    """Sender and receiver factors against one factor per node, paired over seeds."""
    rows = []
    for asymmetric in (True, False):
        per = {"directed": [], "undirected": [], "tensorly CP": []}
        for seed in seeds:
            A, C, truth = make_multilayer_network(
                n,
                4,
                2,
                directed=True,
                asymmetric=asymmetric,
                layer_correlation=rho,
                random_state=seed,
            )
            X, Y = tensor_to_dyads(A, C, random_state=seed)
            X_tr, X_te, Y_tr, Y_te = train_test_split(
                X, Y, test_size=0.1, random_state=seed
            )
            z = truth.communities
            for name in ("directed", "undirected"):
                model = TGINEE(
                    2,
                    dyad_columns=(0, 1),
                    directed=name == "directed",
                    random_state=0,
                )
                start = time.perf_counter()
                model.fit(X_tr, Y_tr)
                seconds = time.perf_counter() - start
                per[name].append(
                    {
                        "auc": _auc(Y_te, model.predict(X_te)),
                        "sender_ari": _ari(z[model.nodes_], model.node_factors_, 3),
                        "receiver_ari": _ari(
                            z[model.nodes_], model.receiver_factors_, 3
                        ),
                        "seconds": seconds,
                    }
                )
            start = time.perf_counter()
            full, (senders, receivers) = _parafac(X_tr, Y_tr, n, 2, directed=True)
            seconds = time.perf_counter() - start
            per["tensorly CP"].append(
                {
                    "auc": _auc(Y_te, _from_tensor(full, X_te)),
                    "sender_ari": _ari(z, senders, 3),
                    "receiver_ari": _ari(z, receivers, 3),
                    "seconds": seconds,
                }
            )
        base = [r["auc"] for r in per["undirected"]]
        for name, results in per.items():
            auc = [r["auc"] for r in results]
            diff, lo, hi = paired_interval(auc, base)
            rows.append(
                {
                    "flows": "asymmetric" if asymmetric else "symmetric",
                    "method": name,
                    "auc": f"{np.mean(auc):.4f}",
                    "auc - undirected [95% CI]": (
                        "-"
                        if name == "undirected"
                        else f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                    ),
                    "sender_ari": f"{np.mean([r['sender_ari'] for r in results]):.3f}",
                    "receiver_ari": (
                        f"{np.mean([r['receiver_ari'] for r in results]):.3f}"
                    ),
                    "fit_seconds": f"{np.mean([r['seconds'] for r in results]):.2f}",
                }
            )
        print(f"asymmetric={asymmetric} done", flush=True)
    return rows


def _write_directed(quick):
    seeds = [0, 1] if quick else list(range(10))
    n = 60 if quick else 100
    rows = directed_part(n, seeds)
    write_results(
        "tginee_directed",
        rows,
        list(rows[0]),
        title="T-GINEE on directed layers: sender and receiver factors "
        f"({len(seeds)} seeds paired, {n} nodes, 4 layers, layer correlation "
        "0.6, 10% of dyads held out)",
        notes="Differences are paired over seeds against the undirected fit "
        "(95% t intervals). The undirected fit's receivers' factors are its "
        "node factors.",
    )


def _write_correlation(quick):
    seeds = [0, 1] if quick else list(range(10))
    rows = correlation_part(80 if quick else 200, seeds)
    write_results(
        "tginee_correlation",
        rows,
        list(rows[0]),
        title="T-GINEE: does the working covariance pay? Held-out link AUC "
        f"({len(seeds)} seeds paired, 200 nodes, 4 layers, 10% of dyads held out)",
        notes="Differences are paired over seeds against the independence fit "
        "(95% t intervals).",
    )


# Each peer's search: configurations scored on a validation split of the
# training dyads (never the test dyads), the best refitted on all of them.
PEER_GRID = {
    "tensorly parafac (masked CP)": [2, 3, 4, 6],  # CP rank
    "per-layer ASE (scipy)": [2, 3, 4, 6],  # embedding dimension per layer
}
PEER_METHODS = {
    "exchangeable": "TGINEE (defaults, exchangeable)",
    "cp": "tensorly parafac (masked CP)",
    "ase": "per-layer ASE (scipy)",
    "gee": "statsmodels GEE, covariates only",
}


def _tuned(name, fit_predict, X_tr, Y_tr, seed):
    """The peer's best configuration on a 10% validation split of the training dyads.

    Returns (configuration, validation AUC of each configuration).
    """
    X_fit, X_val, Y_fit, Y_val = train_test_split(
        X_tr, Y_tr, test_size=0.1, random_state=100 + seed
    )
    scores = {}
    for config in PEER_GRID[name]:
        full, _ = fit_predict(X_fit, Y_fit, config)
        scores[config] = _auc(Y_val, _from_tensor(full, X_val))
    return max(scores, key=scores.get), scores


def peers_part(n, seeds, rank=2):
    """T-GINEE at its defaults against peers tuned on a validation split.

    Each tensor peer picks its rank among ``PEER_GRID`` (4 configurations)
    by held-out AUC on 10% of the training dyads, then is refitted on all
    the training dyads; T-GINEE runs once at its defaults (rank 2, the
    exchangeable working covariance): the search budget favours the peers.
    statsmodels' GEE has no setting that changes its predictions beyond the
    working covariance, fixed at the exchangeable one as ours. Differences
    are paired over seeds.
    """
    rows = []
    for rho in (0.0, 0.6):
        per = {name: [] for name in PEER_METHODS.values()}
        picks = {name: [] for name in PEER_GRID}
        for seed in seeds:
            A, C, truth = make_multilayer_network(
                n, 4, rank, layer_correlation=rho, random_state=seed
            )
            X, Y = tensor_to_dyads(A, C, random_state=seed)
            X_tr, X_te, Y_tr, Y_te = train_test_split(
                X, Y, test_size=0.1, random_state=seed
            )
            z = truth.communities

            def record(
                name, seconds, P, coef=None, factors=None, k=3, z=z, per=per, **kw
            ):
                row = {"auc": _auc(kw["Y_te"], P), "fit_seconds": seconds}
                if coef is not None:
                    row["beta_rel_error"] = np.linalg.norm(
                        coef - kw["beta"]
                    ) / np.linalg.norm(kw["beta"])
                if factors is not None:
                    row["community_ari"] = _ari(z, factors, k)
                per[name].append(row)

            data = {"Y_te": Y_te, "beta": truth.coef}
            model = TGINEE(rank, random_state=0)  # dyad_columns inferred: (0, 1)
            start = time.perf_counter()
            model.fit(X_tr, Y_tr)
            record(
                PEER_METHODS["exchangeable"],
                time.perf_counter() - start,
                model.predict(X_te),
                model.coef_,
                model.node_factors_[np.argsort(model.nodes_)],
                **data,
            )
            for name, fit_predict in (
                (PEER_METHODS["cp"], lambda X_, Y_, r: _parafac(X_, Y_, n, r)),
                (PEER_METHODS["ase"], lambda X_, Y_, r: _ase(X_, Y_, n, r)),
            ):
                start = time.perf_counter()
                config, _ = _tuned(name, fit_predict, X_tr, Y_tr, seed)
                full, factors = fit_predict(X_tr, Y_tr, config)
                picks[name].append(config)
                record(
                    name,
                    time.perf_counter() - start,
                    _from_tensor(full, X_te),
                    factors=factors,
                    **data,
                )
            start = time.perf_counter()
            pred, coef = _statsmodels_gee(X_tr, Y_tr, X_te, 4)
            record(PEER_METHODS["gee"], time.perf_counter() - start, pred, coef, **data)
            print(f"rho {rho} seed {seed} done", flush=True)
        ours = [r["auc"] for r in per[PEER_METHODS["exchangeable"]]]
        ours_ari = [r["community_ari"] for r in per[PEER_METHODS["exchangeable"]]]
        for name, runs in per.items():
            auc = [r["auc"] for r in runs]
            row = {
                "layer_correlation": rho,
                "method": name,
                "configurations searched": (
                    f"rank in {PEER_GRID[name]}" if name in PEER_GRID else "1"
                ),
                "ranks chosen": (
                    " ".join(map(str, picks[name])) if name in PEER_GRID else "-"
                ),
                "auc": f"{np.mean(auc):.4f}",
            }
            if name != PEER_METHODS["exchangeable"]:
                diff, lo, hi = paired_interval(ours, auc)
                row["TGINEE auc - this [95% CI]"] = (
                    f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                )
            else:
                row["TGINEE auc - this [95% CI]"] = "-"
            ari = [r["community_ari"] for r in runs if "community_ari" in r]
            if ari:
                row["community_ari"] = f"{np.mean(ari):.3f}"
                if name != PEER_METHODS["exchangeable"]:
                    diff, lo, hi = paired_interval(ours_ari, ari)
                    row["TGINEE ari - this [95% CI]"] = (
                        f"{diff:+.3f} [{lo:+.3f}, {hi:+.3f}]"
                    )
            beta = [r["beta_rel_error"] for r in runs if "beta_rel_error" in r]
            if beta:
                row["beta_rel_error"] = f"{np.mean(beta):.3f}"
            row["fit_seconds"] = f"{np.mean([r['fit_seconds'] for r in runs]):.2f}"
            rows.append(row)
            print(row, flush=True)
    return rows


def selection_part(n, seeds, hidden=0.2, n_splits=3):
    """Cross-validation on an incomplete network: scorers and splitters.

    ``make_multilayer_network`` (``n`` nodes, 4 layers, layer correlation
    0.6), each entry hidden (NaN) with probability ``hidden`` in either
    direction, so symmetrically (about 36% unobserved at 0.2), the
    dyads in node order (``tensor_to_dyads(shuffle=False)``), as a user who
    built them by hand would have them. ``cross_val_score`` of T-GINEE at its
    defaults with: scikit-learn's ``scoring="roc_auc"`` and default ``KFold``;
    the NaN-aware ``get_observed_scorer("roc_auc")`` with ``KFold`` (which
    tests nodes its training folds never saw, predicted with zero factors);
    the same scorer with ``KFold(shuffle=True)``; and with ``NodeKFold``.
    Per seed: the share of NaN fold scores, the mean fold AUC, and the AUC
    of the same model on a separate test set of 10% of the dyads (the CV
    estimate's target); paired over seeds against ``NodeKFold``.
    """
    import warnings as _warnings

    from sklearn.model_selection import KFold, cross_val_score

    from sklearn_ext.network import NodeKFold, get_observed_scorer

    observed = get_observed_scorer("roc_auc")
    setups = {
        'KFold, scoring="roc_auc"': (lambda s: KFold(n_splits), "roc_auc"),
        "KFold, observed scorer": (lambda s: KFold(n_splits), observed),
        "KFold(shuffle), observed scorer": (
            lambda s: KFold(n_splits, shuffle=True, random_state=s),
            observed,
        ),
        "NodeKFold, observed scorer": (
            lambda s: NodeKFold(n_splits, shuffle=True, random_state=s),
            observed,
        ),
    }
    per = {name: {"nan": [], "cv": [], "test": []} for name in setups}
    for seed in seeds:
        A, C, _ = make_multilayer_network(
            n, 4, 2, layer_correlation=0.6, random_state=seed
        )
        rng = np.random.RandomState(seed)
        hide = rng.rand(*A.shape) < hidden
        A = np.where(hide | hide.transpose(0, 2, 1), np.nan, A)
        X, Y = tensor_to_dyads(A, C, shuffle=False)
        test = np.random.RandomState(seed).rand(len(X)) < 0.1
        X_cv, Y_cv = X[~test], Y[~test]
        held_out = _auc(
            Y[test], TGINEE(random_state=0).fit(X_cv, Y_cv).predict(X[test])
        )
        for name, (make_cv, scoring) in setups.items():
            with _warnings.catch_warnings():
                _warnings.simplefilter("ignore")
                scores = cross_val_score(
                    TGINEE(random_state=0),
                    X_cv,
                    Y_cv,
                    scoring=scoring,
                    cv=make_cv(seed),
                )
            per[name]["nan"].append(float(np.isnan(scores).mean()))
            per[name]["cv"].append(
                float(np.nanmean(scores))
                if not np.isnan(scores).all()
                else float("nan")
            )
            per[name]["test"].append(held_out)
        print(f"seed {seed} done", flush=True)
    rows = []
    base = per["NodeKFold, observed scorer"]
    for name, runs in per.items():
        cv = np.array(runs["cv"])
        row = {
            "cv, scoring": name,
            "NaN fold scores": f"{np.mean(runs['nan']):.2f}",
            "mean CV AUC": "nan" if np.isnan(cv).all() else f"{np.nanmean(cv):.4f}",
            "test AUC": f"{np.mean(runs['test']):.4f}",
        }
        if np.isnan(cv).any():
            row["CV - test [95% CI]"] = "-"
            row["CV - NodeKFold CV [95% CI]"] = "-"
        else:
            diff, lo, hi = paired_interval(cv, runs["test"])
            row["CV - test [95% CI]"] = f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"
            if runs is base:
                row["CV - NodeKFold CV [95% CI]"] = "-"
            else:
                diff, lo, hi = paired_interval(cv, base["cv"])
                row["CV - NodeKFold CV [95% CI]"] = (
                    f"{diff:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                )
        rows.append(row)
        print(row, flush=True)
    return rows


def inference_part(n, reps):
    rows = []
    for rho in (0.0, 0.6):
        for cov in ("independence", "exchangeable"):
            estimates, hits, widths = [], [], []
            for seed in range(reps):
                A, C, truth = make_multilayer_network(
                    n, 3, 2, layer_correlation=rho, random_state=1000 + seed
                )
                X, Y = tensor_to_dyads(A, C)
                model = TGINEE(
                    2, dyad_columns=(0, 1), working_covariance=cov, random_state=0
                ).fit(X, Y)
                lo, hi = np.moveaxis(model.conf_int(0.05), -1, 0)
                hits.append((lo <= truth.coef) & (truth.coef <= hi))
                widths.append(hi - lo)
                estimates.append(model.coef_ - truth.coef)
            rows.append(
                {
                    "layer_correlation": rho,
                    "working_covariance": cov,
                    "coverage_95": float(np.mean(hits)),
                    "mean_ci_width": float(np.mean(widths)),
                    "empirical_sd_beta": float(np.std(estimates, axis=0).mean()),
                    "mean_bias_beta": float(np.mean(estimates)),
                    "repetitions": reps,
                }
            )
            print(rows[-1], flush=True)
    return rows


def efficiency_part(n, reps, missing=0.5):
    """Where the working covariance should matter: unobserved entries.

    With every layer seeing the same covariates, GLS and OLS coincide
    (seemingly unrelated regressions with identical regressors). Hiding half
    of the entries at random breaks that: a dyad's observed layers then carry
    information about each other's errors. Identity link (weighted edges),
    so that the layer correlation is not attenuated by a binary copula.
    """
    rows = []
    for rho in (0.0, 0.6, 0.9):
        sds = {}
        for cov in ("independence", "exchangeable", "unstructured"):
            errors = []
            for seed in range(reps):
                A, C, truth = make_multilayer_network(
                    n,
                    3,
                    2,
                    link="identity",
                    layer_correlation=rho,
                    random_state=2000 + seed,
                )
                X, Y = tensor_to_dyads(A, C)
                rng = np.random.RandomState(seed)
                Y = np.where(rng.rand(*Y.shape) < missing, np.nan, Y)
                keep = ~np.isnan(Y).all(1)
                model = TGINEE(
                    2,
                    dyad_columns=(0, 1),
                    link="identity",
                    working_covariance=cov,
                    random_state=0,
                ).fit(X[keep], Y[keep])
                errors.append(model.coef_ - truth.coef)
            sds[cov] = float(np.std(errors, axis=0).mean())
            rows.append(
                {
                    "layer_correlation": rho,
                    "working_covariance": cov,
                    "empirical_sd_beta": sds[cov],
                    "sd_vs_independence": sds[cov] / sds["independence"],
                    "repetitions": reps,
                }
            )
            print(rows[-1], flush=True)
    return rows


def mice_part(rank=4):
    """Mouse connectomes: held-out dyads, no anatomical covariates for anyone.

    The anatomical labels are what the factors' ARI is scored against, so no
    method gets them (nor the hemisphere) as covariates: every method sees
    only the 32 binary layers of the training dyads.
    """
    data = load_mice_connectomes()
    A = (data.graphs > 0).astype(float)
    n = A.shape[1]
    for layer in A:
        np.fill_diagonal(layer, np.nan)
    X, Y = tensor_to_dyads(A)
    X_tr, X_te, Y_tr, Y_te = train_test_split(X, Y, test_size=0.1, random_state=0)
    labels = np.unique(
        np.char.add(data.hemisphere.astype(str), data.blocks.astype(str)),
        return_inverse=True,
    )[1]
    rows = []

    def add(name, seconds, P, factors=None):
        row = {"method": name, "auc": _auc(Y_te, P), "fit_seconds": seconds}
        if factors is not None:
            row["block_ari_14"] = _ari(labels, factors, 14)
        rows.append(row)
        print(row, flush=True)

    for cov in ("independence", "exchangeable", "unstructured"):
        model = TGINEE(
            rank, dyad_columns=(0, 1), working_covariance=cov, random_state=0
        )
        start = time.perf_counter()
        model.fit(X_tr, Y_tr)
        add(
            f"TGINEE, {cov}",
            time.perf_counter() - start,
            model.predict(X_te),
            model.node_factors_[np.argsort(model.nodes_)],
        )
    start = time.perf_counter()
    full, factors = _parafac(X_tr, Y_tr, n, rank)
    add(
        "tensorly parafac (masked CP)",
        time.perf_counter() - start,
        _from_tensor(full, X_te),
        factors,
    )
    start = time.perf_counter()
    full, emb = _ase(X_tr, Y_tr, n, rank)
    add(
        "per-layer ASE (scipy)",
        time.perf_counter() - start,
        _from_tensor(full, X_te),
        emb,
    )
    return rows


def speed_part(sizes, n_layers=10, rank=2):
    import tensorly as tl
    import torch  # noqa: F401 - loaded first: its libraries are not the fit's memory
    from tensorly.decomposition import parafac

    rows = []
    for n in sizes:
        A, C, _ = make_multilayer_network(n, n_layers, rank, random_state=0)
        X, Y = tensor_to_dyads(A, C)
        dense = tl.tensor(np.nan_to_num(A))
        repeat = 1 if n >= 1000 else 2
        ours, _ = measure(
            lambda X=X, Y=Y: TGINEE(rank, dyad_columns=(0, 1), random_state=0).fit(
                X, Y
            ),
            repeat=repeat,
            warmup=False,
        )
        cp, _ = measure(
            lambda dense=dense: parafac(
                dense, rank, init="random", n_iter_max=200, random_state=0
            ),
            repeat=repeat,
            warmup=False,
        )
        rows.append(
            {
                "n_nodes": n,
                "n_dyads": len(X),
                "tginee_seconds": ours["seconds"],
                "parafac_seconds": cp["seconds"],
                "ratio_tginee_over_parafac": ours["seconds"] / cp["seconds"],
                "tginee_peak_mb": ours["peak_mb"],
                "parafac_peak_mb": cp["peak_mb"],
            }
        )
        print(rows[-1], flush=True)
    return rows


def masked_solve_speed(n_nodes=300, n_layers=32, missing=0.1, repeat=5):
    """One evaluation of the GEE blocks, complete against scattered NaN.

    The data are a fitted model's moments at 32 layers (44,850 dyads at 300
    nodes, 2 covariates and the intercept); the working correlation is the
    fit's exchangeable one, or an unstructured one (a random correlation
    matrix). Each time is the best of ``repeat`` calls of
    ``MaskedInverse(R, layout)`` plus ``gee_blocks``, the work of one
    Fisher-scoring step.
    """
    import torch

    from sklearn_ext.network._tginee_solver import (
        MaskedInverse,
        gee_blocks,
        missing_layout,
    )

    rng = np.random.default_rng(0)
    n = n_nodes * (n_nodes - 1) // 2
    Zt = torch.as_tensor(np.c_[rng.normal(size=(n, 2)), np.ones(n)])
    mu = torch.as_tensor(rng.uniform(0.05, 0.95, (n, n_layers)))
    Y = torch.as_tensor((rng.random((n, n_layers)) < mu.numpy()).astype(float))
    dmu = mu * (1 - mu)
    weights = torch.ones(n, dtype=torch.float64)
    B = rng.normal(size=(n_layers, n_layers))
    C = B @ B.T + n_layers * np.eye(n_layers)
    exchangeable = np.full((n_layers, n_layers), 0.4)
    np.fill_diagonal(exchangeable, 1.0)
    correlations = {
        "exchangeable": exchangeable,
        "unstructured": C / np.sqrt(np.outer(np.diag(C), np.diag(C))),
    }
    masks = {
        "complete": np.ones((n, n_layers), bool),
        f"{missing:.0%} missing": rng.random((n, n_layers)) >= missing,
    }
    rows = []
    for structure, R in correlations.items():
        times = {}
        for label, mask in masks.items():
            layout = missing_layout(mask, torch.device("cpu"))
            M = layout.mask
            inv_sd = M / (mu * (1 - mu)).sqrt()
            best = np.inf
            for _ in range(repeat):
                start = time.perf_counter()
                inverse = MaskedInverse(torch.as_tensor(R), layout)
                gee_blocks(dmu, inv_sd, (Y - mu) * M, inverse, Zt, weights)
                best = min(best, time.perf_counter() - start)
            times[label] = best
        labels = list(masks)
        rows.append(
            {
                "working_covariance": structure,
                "n_dyads": n,
                "n_layers": n_layers,
                f"{labels[0]}_seconds": times[labels[0]],
                f"{labels[1]}_seconds": times[labels[1]],
                "ratio_missing_over_complete": times[labels[1]] / times[labels[0]],
            }
        )
        print(rows[-1], flush=True)
    return rows


def _write_peers(quick, seeds):
    rows = peers_part(80 if quick else 200, seeds[:1] if quick else seeds)
    columns = [
        "layer_correlation",
        "method",
        "configurations searched",
        "ranks chosen",
        "auc",
        "TGINEE auc - this [95% CI]",
        "community_ari",
        "TGINEE ari - this [95% CI]",
        "beta_rel_error",
        "fit_seconds",
    ]
    write_results(
        "tginee_peers",
        rows,
        columns,
        title="T-GINEE at its defaults against peers tuned on a validation split "
        f"(200 nodes, 4 layers, held-out 10% of dyads; {len(seeds)} seeds paired)",
        notes="Each tensor peer picks its rank among 4 by held-out AUC on 10% of "
        "the training dyads and is refitted on all of them; T-GINEE runs once at "
        "its defaults (dyad_columns inferred), so the search budget favours the "
        "peers. Differences are T-GINEE minus the peer, paired over seeds "
        "(95% t intervals).",
    )


def _write_selection(quick, seeds):
    rows = selection_part(40 if quick else 80, seeds[:2] if quick else seeds)
    write_results(
        "tginee_selection",
        rows,
        list(rows[0]),
        title="Cross-validating T-GINEE on an incomplete network in node order "
        "(80 nodes, 4 layers, each node pair's entry hidden with probability 0.2 "
        f"in each direction, about 36% unobserved; 3 folds; {len(seeds)} seeds "
        "paired)",
        notes="'test AUC' is the same model fitted on the CV dyads and scored on "
        "a separate 10% of the dyads: what the CV estimate should approach. "
        "KFold on dyads in node order tests nodes its training folds never saw "
        "(predicted from covariates and intercepts, with a warning).",
    )


def _write_inference(quick):
    write_results(
        "tginee_inference",
        inference_part(60 if quick else 100, 5 if quick else 100),
        [
            "layer_correlation",
            "working_covariance",
            "coverage_95",
            "mean_ci_width",
            "empirical_sd_beta",
            "mean_bias_beta",
            "repetitions",
        ],
        title="T-GINEE sandwich intervals of beta: coverage and efficiency",
    )


def _write_efficiency(quick):
    write_results(
        "tginee_efficiency",
        efficiency_part(60 if quick else 100, 5 if quick else 100),
        [
            "layer_correlation",
            "working_covariance",
            "empirical_sd_beta",
            "sd_vs_independence",
            "repetitions",
        ],
        title="T-GINEE: spread of beta over repetitions with half of the entries "
        "unobserved (identity link, 100 nodes, 3 layers)",
    )


def _write_mice():
    write_results(
        "tginee_mice",
        mice_part(),
        ["method", "auc", "block_ari_14", "fit_seconds"],
        title="32 mouse DTI connectomes as a 32-layer binary network "
        "(held-out 10% of dyads, no covariates for any method)",
    )


def two_step_speed(n=500, n_layers=8, rank=2):
    """One T-GINEE fit against the two-step peer: tensorly's CP, then GEE."""
    import tensorly as tl
    from tensorly.decomposition import parafac

    A, C, _ = make_multilayer_network(
        n, n_layers, rank, layer_correlation=0.6, random_state=0
    )
    X, Y = tensor_to_dyads(A, C)
    start = time.perf_counter()
    TGINEE(rank, dyad_columns=(0, 1), random_state=0).fit(X, Y)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    parafac(
        tl.tensor(np.nan_to_num(A)), rank, init="random", n_iter_max=200, random_state=0
    )
    cp = time.perf_counter() - start
    start = time.perf_counter()
    _statsmodels_gee(X, Y, X[:10], n_layers)
    gee = time.perf_counter() - start
    return [
        {
            "n_nodes": n,
            "n_layers": n_layers,
            "n_dyads": len(X),
            "tginee_seconds": ours,
            "parafac_seconds": cp,
            "statsmodels_gee_seconds": gee,
            "ratio_tginee_over_two_step": ours / (cp + gee),
        }
    ]


def _write_speed(quick):
    write_results(
        "tginee_speed",
        speed_part([100, 300] if quick else [100, 300, 1000]),
        [
            "n_nodes",
            "n_dyads",
            "tginee_seconds",
            "parafac_seconds",
            "ratio_tginee_over_parafac",
            "tginee_peak_mb",
            "parafac_peak_mb",
        ],
        title="T-GINEE against tensorly's CP: fit time and memory (10 layers, rank 2)",
    )
    rows = two_step_speed(200 if quick else 500)
    write_results(
        "tginee_two_step_speed",
        rows,
        list(rows[0]),
        title="One T-GINEE fit (exchangeable) against tensorly's CP plus statsmodels' "
        "GEE on the covariates (layer correlation 0.6, rank 2)",
    )


def missing_fit_speed(n_nodes=100, n_layers=16, missing=0.1, repeat=2):
    """Whole fits, complete against 10% of the entries missing, side by side.

    The same network (layer correlation 0.6, rank 2), fitted at the defaults
    with each working covariance, once complete and once with ``missing`` of
    the entries hidden at random; the two alternate, and each time is the
    best of ``repeat`` fits.
    """
    A, C, _ = make_multilayer_network(
        n_nodes, n_layers, 2, layer_correlation=0.6, random_state=0
    )
    X, Y = tensor_to_dyads(A, C)
    hidden = np.random.RandomState(0).rand(*Y.shape) < missing
    data = {"complete": Y, f"{missing:.0%} missing": np.where(hidden, np.nan, Y)}
    TGINEE(2, random_state=0).fit(X, Y)  # unmeasured warm-up (lazy imports)
    rows = []
    for cov in ("exchangeable", "unstructured"):
        best = dict.fromkeys(data, np.inf)
        for _ in range(repeat):
            for label, y in data.items():
                start = time.perf_counter()
                TGINEE(2, working_covariance=cov, random_state=0).fit(X, y)
                best[label] = min(best[label], time.perf_counter() - start)
        labels = list(data)
        rows.append(
            {
                "working_covariance": cov,
                "n_dyads": len(X),
                "n_layers": n_layers,
                f"{labels[0]}_seconds": best[labels[0]],
                f"{labels[1]}_seconds": best[labels[1]],
                "ratio_missing_over_complete": best[labels[1]] / best[labels[0]],
            }
        )
        print(rows[-1], flush=True)
    return rows


def _write_missing_speed(quick, seeds=None):
    rows = missing_fit_speed(60 if quick else 100, repeat=1 if quick else 2)
    write_results(
        "tginee_missing_fit",
        rows,
        list(rows[0]),
        title="Whole T-GINEE fits with 10% of the entries missing against complete "
        "data (16 layers, rank 2, best of 2 fits each, alternating)",
        notes="Timing part: run on an idle machine.",
    )
    rows = masked_solve_speed(100 if quick else 300)
    write_results(
        "tginee_masked_solve",
        rows,
        list(rows[0]),
        title="One evaluation of the GEE blocks with scattered missing entries "
        "against complete data (32 layers, best of 5 calls)",
        notes="Exchangeable: closed-form R_O^{-1} (one rank-one term per dyad). "
        "Unstructured: low-rank form over each dyad's missing (or observed) "
        "layers, one batched Cholesky per count. The former loop over missing "
        "patterns took about 7.4 s a call at this size and the batched "
        "per-pattern inverse 1.5-2.2 s. Timing part: run on an idle machine.",
    )


_BUDGET = {
    "ours": "TGINEE at rank 2 (4 on the mouse connectomes) with its other "
    "parameters at their defaults, no tuning",
    "peers": "tensorly's masked parafac at the same rank (random init, 200 "
    "iterations), per-layer adjacency spectral embedding at the same rank, "
    "statsmodels' GEE (Binomial, exchangeable) on the covariates; untuned",
}
_SPEED_BUDGET = {
    "ours": "one TGINEE fit at its defaults (rank 2)",
    "peers": "one tensorly parafac at the same rank (random init, 200 "
    "iterations); statsmodels' GEE on the covariates",
}


def _correlation_claims():
    claims = []
    diff = "auc - independence [95% CI]"
    for rho in (0.0, 0.3, 0.6, 0.9):
        for hidden in (0.0, 0.3):
            for cov in COVS:
                row = {
                    "layer_correlation": rho,
                    "hidden entries": hidden,
                    "working_covariance": cov,
                }
                key = f"{cov}_r{rho:g}_h{hidden:g}"
                claims += [
                    Claim(f"{key}_auc", row, "auc", metric="held-out AUC"),
                    Claim(f"{key}_ari", row, "community_ari"),
                    Claim(f"{key}_beta", row, "beta_rel_error"),
                    Claim(f"{key}_rounds", row, "rounds"),
                ]
                if cov != "independence":
                    claims.append(
                        Claim(
                            f"{key}_vs_independence",
                            row,
                            diff,
                            metric="held-out AUC, this - independence",
                            peer={**row, "working_covariance": "independence"},
                            peer_column="auc",
                        )
                    )

    def extreme(pick, correlated):
        def compute(rows):
            values = [
                float(r["community_ari"])
                for r in rows
                if float(r["layer_correlation"]) > 0
                and (r["working_covariance"] != "independence") == correlated
            ]
            value = pick(values)
            return value, f"{value:.3f}"

        return compute

    for name, pick in (("min", min), ("max", max)):
        for side, correlated in (("correlated", True), ("independence", False)):
            claims.append(
                Claim(
                    f"ari_{side}_{name}",
                    0,
                    "community_ari",
                    metric=f"{name} community ARI over layer correlation > 0, "
                    f"{side} working covariance",
                    compute=extreme(pick, correlated),
                )
            )

    def rounds(pick):
        def compute(rows):
            value = pick(
                int(r["rounds"])
                for r in rows
                if r["working_covariance"] != "independence"
                and float(r["layer_correlation"]) > 0
            )
            return value, str(value)

        return compute

    claims += [
        Claim(
            f"rounds_{name}",
            0,
            "rounds",
            metric=f"{name} rounds of the correlated fits, layer correlation > 0",
            compute=rounds(pick),
        )
        for name, pick in (("min", min), ("max", max))
    ]
    return claims


def _directed_claims():
    claims = []
    for flows in ("asymmetric", "symmetric"):
        for method, key in (
            ("directed", "directed"),
            ("undirected", "undirected"),
            ("tensorly CP", "cp"),
        ):
            row = {"flows": flows, "method": method}
            claims += [
                Claim(f"{flows}_{key}_auc", row, "auc", metric="held-out AUC"),
                Claim(f"{flows}_{key}_sender_ari", row, "sender_ari"),
                Claim(f"{flows}_{key}_receiver_ari", row, "receiver_ari"),
            ]
            if method != "undirected":
                claims.append(
                    Claim(
                        f"{flows}_{key}_vs_undirected",
                        row,
                        "auc - undirected [95% CI]",
                        metric="held-out AUC, this - undirected",
                        peer={"flows": flows, "method": "undirected"},
                        peer_column="auc",
                    )
                )
    return claims


def _peer_claims():
    claims = []
    for rho in (0.0, 0.6):
        for key, method in PEER_METHODS.items():
            row = {"layer_correlation": rho, "method": method}
            claims.append(
                Claim(f"{key}_r{rho:g}_auc", row, "auc", metric="held-out AUC")
            )
            if key != "gee":
                claims.append(Claim(f"{key}_r{rho:g}_ari", row, "community_ari"))
            if key not in ("cp", "ase"):
                claims.append(Claim(f"{key}_r{rho:g}_beta", row, "beta_rel_error"))
            if key != "exchangeable":
                claims.append(
                    Claim(
                        f"{key}_r{rho:g}_vs_ours",
                        row,
                        "TGINEE auc - this [95% CI]",
                        metric="held-out AUC, TGINEE - this peer",
                        peer_column="auc",
                    )
                )
    return claims


def _selection_claims():
    claims = []
    for key, name in (
        ("kfold_string", 'KFold, scoring="roc_auc"'),
        ("kfold_observed", "KFold, observed scorer"),
        ("shuffled_observed", "KFold(shuffle), observed scorer"),
        ("nodekfold_observed", "NodeKFold, observed scorer"),
    ):
        claims.append(Claim(f"{key}_nan", name, "NaN fold scores"))
        if key != "kfold_string":  # its CV AUC is NaN
            claims.append(
                Claim(f"{key}_cv_auc", name, "mean CV AUC", metric="mean CV AUC")
            )
            claims.append(
                Claim(
                    f"{key}_vs_test",
                    name,
                    "CV - test [95% CI]",
                    metric="CV AUC - held-out test AUC",
                    peer=name,
                    peer_column="test AUC",
                )
            )
    claims.append(Claim("test_auc", "NodeKFold, observed scorer", "test AUC"))
    return claims


def _inference_claims():
    claims = []
    for rho in (0.0, 0.6):
        for cov in ("independence", "exchangeable"):
            row = {"layer_correlation": rho, "working_covariance": cov}
            key = f"{cov}_r{rho:g}"
            claims += [
                Claim(f"{key}_coverage", row, "coverage_95", fmt=".3f"),
                Claim(f"{key}_width", row, "mean_ci_width", fmt=".3f"),
                Claim(f"{key}_sd", row, "empirical_sd_beta", fmt=".4f"),
            ]

    def coverage(pick):
        def compute(rows):
            value = pick(float(r["coverage_95"]) for r in rows)
            return value, f"{value:.3f}"

        return compute

    claims += [
        Claim(
            f"coverage_{name}",
            0,
            "coverage_95",
            metric=f"{name} coverage of the 95% intervals over the rows",
            compute=coverage(pick),
        )
        for name, pick in (("min", min), ("max", max))
    ]
    claims.append(
        Claim(
            "intervals_per_row",
            0,
            "repetitions",
            metric="intervals per row (repetitions x layers x covariates)",
            compute=lambda rows: (
                int(rows[0]["repetitions"]) * 6,
                str(int(rows[0]["repetitions"]) * 6),
            ),
            note="3 layers x 2 covariates per repetition",
        )
    )
    return claims


def _efficiency_claims():
    claims = []
    for rho in (0.0, 0.6, 0.9):
        for cov in ("exchangeable", "unstructured"):
            row = {"layer_correlation": rho, "working_covariance": cov}
            claims.append(
                Claim(
                    f"{cov}_r{rho:g}_ratio",
                    row,
                    "sd_vs_independence",
                    metric="spread of beta, this / independence",
                    fmt=".2f" if rho else ".3f",
                )
            )
    return claims


def _mice_claims():
    methods = {
        "independence": "TGINEE, independence",
        "exchangeable": "TGINEE, exchangeable",
        "unstructured": "TGINEE, unstructured",
        "cp": "tensorly parafac (masked CP)",
        "ase": "per-layer ASE (scipy)",
    }
    claims = []
    for key, method in methods.items():
        claims += [
            Claim(f"{key}_auc", method, "auc", metric="held-out AUC", fmt=".3f"),
            Claim(f"{key}_ari", method, "block_ari_14", fmt=".2f"),
        ]

    def ari(pick):
        def compute(rows):
            value = pick(float(r["block_ari_14"]) for r in rows)
            return value, f"{value:.2f}"

        return compute

    claims += [
        Claim(
            f"ari_{name}",
            0,
            "block_ari_14",
            metric=f"{name} ARI of the 14 anatomical blocks over the methods",
            compute=ari(pick),
        )
        for name, pick in (("min", min), ("max", max))
    ]
    return claims


def _ratio_range(column):
    def extreme(pick):
        def compute(rows):
            value = pick(float(r[column]) for r in rows)
            return value, f"{value:.1f}"

        return compute

    return [
        Claim(
            f"ratio_{name}",
            0,
            column,
            metric=f"{name} of {column} over the sizes",
            compute=extreme(pick),
        )
        for name, pick in (("min", min), ("max", max))
    ]


_GENERATED = (
    "make_multilayer_network (logit link, rank 2, 3 communities, 2 dyad covariates)"
)
LEDGER = {
    "tginee_correlation": Ledger(
        "TGINEE (working_covariance independence / exchangeable / unstructured)",
        f"{_GENERATED}: 200 nodes, 4 layers, layer correlation 0 / 0.3 / 0.6 / "
        "0.9, 0% or 30% of the training entries hidden; 10% of the dyads held out",
        10,
        {"ours": _BUDGET["ours"], "peers": "the same model under independence"},
        _correlation_claims(),
    ),
    "tginee_peers": Ledger(
        "TGINEE",
        f"{_GENERATED}: 200 nodes, 4 layers, layer correlation 0 and 0.6; 10% "
        "of the dyads held out",
        5,
        {
            "ours": "TGINEE at its defaults (rank 2, exchangeable), one "
            "configuration, no tuning",
            "peers": "tensorly's masked parafac and per-layer ASE: rank among "
            "2, 3, 4, 6 chosen by AUC on a 10% validation split of the training "
            "dyads, then refitted (4 configurations each); statsmodels' GEE "
            "(Binomial, exchangeable) on the covariates, nothing to tune",
        },
        _peer_claims(),
    ),
    "tginee_selection": Ledger(
        "TGINEE with NodeKFold and get_observed_scorer",
        "make_multilayer_network (logit link, rank 2): 80 nodes, 4 layers, layer "
        "correlation 0.6, about 36% of the entries unobserved (each hidden with "
        "probability 0.2, symmetrically), dyads in node order; 3-fold "
        "cross_val_score",
        5,
        {
            "ours": "NodeKFold(3, shuffle=True) with get_observed_scorer('roc_auc')",
            "peers": "scikit-learn's KFold(3) with scoring='roc_auc', KFold(3) and "
            "KFold(3, shuffle=True) with the observed scorer",
        },
        _selection_claims(),
    ),
    "tginee_missing_fit": Ledger(
        "TGINEE",
        "make_multilayer_network: 100 nodes, 16 layers, rank 2, layer "
        "correlation 0.6, 10% of the entries missing at random",
        "random_state=0",
        {"ours": "best of 2 fits", "peers": "the same fit on complete data"},
        [
            Claim(
                f"{cov}_ratio",
                cov,
                "ratio_missing_over_complete",
                metric="fit time with 10% missing / complete",
                fmt=".2f",
            )
            for cov in ("exchangeable", "unstructured")
        ],
    ),
    "tginee_inference": Ledger(
        "TGINEE (sandwich intervals of beta)",
        f"{_GENERATED}: 100 nodes, 3 layers, layer correlation 0 and 0.6",
        100,
        {"ours": _BUDGET["ours"], "peers": "none: coverage of the nominal level"},
        _inference_claims(),
    ),
    "tginee_efficiency": Ledger(
        "TGINEE (spread of beta by working covariance)",
        "make_multilayer_network (identity link), 100 nodes, 3 layers, layer "
        "correlation 0 / 0.6 / 0.9, half of the entries hidden at random",
        100,
        {"ours": _BUDGET["ours"], "peers": "the same model under independence"},
        _efficiency_claims(),
    ),
    "tginee_mice": Ledger(
        "TGINEE",
        "load_mice_connectomes: 32 binary layers (non-zero weights), 332 nodes, "
        "no covariates; 10% of the dyads held out",
        "one split (random_state=0)",
        _BUDGET,
        _mice_claims(),
    ),
    "tginee_directed": Ledger(
        "TGINEE (directed=True)",
        "make_multilayer_network(directed=True, asymmetric=True / False): 100 "
        "nodes, 4 layers, layer correlation 0.6; 10% of the dyads held out",
        10,
        {
            "ours": _BUDGET["ours"],
            "peers": "the undirected TGINEE fit; tensorly's masked parafac of the "
            "(layers, senders, receivers) tensor at rank 2",
        },
        _directed_claims(),
    ),
    "tginee_speed": Ledger(
        "TGINEE",
        "make_multilayer_network: 100, 300 and 1000 nodes, 10 layers, rank 2",
        "random_state=0",
        _SPEED_BUDGET,
        _ratio_range("ratio_tginee_over_parafac")
        + [
            Claim("seconds_1000", {"n_nodes": 1000}, "tginee_seconds", fmt=".0f"),
            Claim("peak_mb_1000", {"n_nodes": 1000}, "tginee_peak_mb", fmt=".0f"),
            Claim(
                "parafac_peak_mb_1000", {"n_nodes": 1000}, "parafac_peak_mb", fmt=".0f"
            ),
        ],
    ),
    "tginee_masked_solve": Ledger(
        "TGINEE's GEE blocks (MaskedInverse + gee_blocks)",
        "a fitted model's moments at 300 nodes (44,850 dyads), 32 layers, 10% "
        "of the entries missing at random",
        "random_state=0",
        {"ours": "best of 5 calls", "peers": "the same call on complete data"},
        [
            Claim(
                f"{cov}_ratio",
                cov,
                "ratio_missing_over_complete",
                metric="time with 10% missing / complete",
                fmt=".2f",
            )
            for cov in ("exchangeable", "unstructured")
        ]
        + [
            Claim(
                f"{cov}_{what}_seconds",
                cov,
                column,
                fmt=".2f",
            )
            for cov in ("exchangeable", "unstructured")
            for what, column in (
                ("complete", "complete_seconds"),
                ("missing", "10% missing_seconds"),
            )
        ],
    ),
    "tginee_two_step_speed": Ledger(
        "TGINEE (exchangeable)",
        "make_multilayer_network: 500 nodes, 8 layers, layer correlation 0.6",
        "random_state=0",
        _SPEED_BUDGET,
        [
            Claim("tginee_seconds", 0, "tginee_seconds", fmt=".1f"),
            Claim("parafac_seconds", 0, "parafac_seconds", fmt=".1f"),
            Claim("gee_seconds", 0, "statsmodels_gee_seconds", fmt=".1f"),
            Claim("ratio", 0, "ratio_tginee_over_two_step", fmt=".2f"),
        ],
    ),
}


PARTS = {
    "peers": _write_peers,
    "selection": _write_selection,
    "correlation": lambda quick, seeds: _write_correlation(quick),
    "inference": lambda quick, seeds: _write_inference(quick),
    "efficiency": lambda quick, seeds: _write_efficiency(quick),
    "mice": lambda quick, seeds: _write_mice(),
    "directed": lambda quick, seeds: _write_directed(quick),
    "speed": lambda quick, seeds: _write_speed(quick),
    "missing_speed": _write_missing_speed,
}
# The default run (seeds 0-4, about 20-30 minutes at one thread): the peers
# and the cross-validation parts. The others keep their own seeds and run
# when named; "speed" and "missing_speed" are timing parts, for an idle
# machine.
DEFAULT_PARTS = ("peers", "selection")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=list(PARTS),
        default=None,
        help=f"the parts to run ({', '.join(DEFAULT_PARTS)} by default; the "
        "timing parts speed and missing_speed only on an idle machine)",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=[0, 1, 2, 3, 4],
        help="seeds of the peers and selection parts",
    )
    parser.add_argument(
        "--speed-only", action="store_true", help="only the time and memory table"
    )
    parser.add_argument("--correlation-only", action="store_true", help="only part 0")
    parser.add_argument("--mice-only", action="store_true", help="only part 3")
    parser.add_argument("--directed-only", action="store_true", help="only part 5")
    args = parser.parse_args()
    parts = args.parts or list(DEFAULT_PARTS)
    for flag, part in (
        ("speed_only", "speed"),
        ("correlation_only", "correlation"),
        ("mice_only", "mice"),
        ("directed_only", "directed"),
    ):
        if getattr(args, flag):
            parts = [part]
    for part in parts:
        PARTS[part](args.quick, args.seeds)


if __name__ == "__main__":
    main()

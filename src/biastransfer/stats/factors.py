"""What predicts a measure across models: a meta-regression of one value per model and test on model covariates.

The design follows Ghate et al. (NAACL 2025), who regress CLIP models' association effect sizes on the
models' covariates with random effects for the test. Observations are rows ``model, test, value`` (and
``dataset``, the finetuning dataset, where a question spans several; ``seed`` rows of one model repeat it).
Covariates are one value per model, or a column of the observations (the finetuning dataset, a within-model
covariate; a value measured per model and dataset, such as the linear CKA).

- **The model** (:func:`meta_regression`): a linear mixed model, fitted once by REML (statsmodels
  ``MixedLM``), with the covariates as fixed effects and crossed random intercepts for the iEAT test and for
  the model (which repeats over tests, seeds and datasets). Its fixed effects, their Wald standard errors and
  the three standard deviations (test, model, residual) are reported.
- **The intervals** (:func:`unit_regression`): a cluster bootstrap over models (models drawn with
  replacement, each with all its rows), refitting each replicate in closed form: the least squares of each
  unit's mean (a model, or a model on one finetuning dataset; its tests and seeds averaged) on the
  covariates. With every model measured on every test (a balanced design), this estimator equals the mixed
  model's GLS fixed effects, so the replicates need no refit of the mixed model (2,000 of them cost one
  batched solve); unbalanced, the two estimates differ and both are reported. The interval is the
  replicates' expanded percentile interval (Hesterberg 2015: :func:`expanded_tail`), which widens it for
  few models as a t interval would; a replicate that leaves a level of a categorical covariate out cannot
  estimate its coefficient and is dropped (``replicates_used``).
- **Too few models**: a question is answered only with at least ``per_coefficient`` (10) models for each
  coefficient other than the intercept, and at least 2 models at every level of a categorical covariate
  (the rule of thumb of meta-regression: Higgins et al., Cochrane Handbook, section 10.11.5); below that
  the verdict says "too few models" and names how many the rule asks for.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from biastransfer.stats._validation import Result, check_positive_int, check_seed
from biastransfer.stats.bootstrap import check_level, resample_counts

#: Models per coefficient (other than the intercept) that a question needs (docs/statistics.md).
PER_COEFFICIENT = 10
#: Models that each level of a categorical covariate needs.
PER_LEVEL = 2
TOO_FEW = "too few models"
INTERCEPT = "intercept"
#: The observation column that holds the finetuning dataset, usable as a (within-model) covariate.
DATASET = "dataset"


@dataclass(frozen=True)
class Coefficient(Result):
    """One term of the regression: the unit-mean ``estimate`` with its cluster-bootstrap percentile interval,
    the mixed model's estimate and Wald standard error, and a verdict in words."""

    term: str
    estimate: float
    ci_low: float
    ci_high: float
    estimate_mixed: float
    se_mixed: float
    verdict: str


@dataclass(frozen=True)
class FactorsResult(Result):
    """Outcome of :func:`meta_regression`: the ``coefficients`` (intercept first), the counts behind them
    (``n_models``, ``n_units`` means regressed, ``n_observations`` rows, ``n_tests``), the residual degrees of
    freedom of the unit-mean regression ``df_resid`` (units - coefficients), the mixed model's standard
    deviations, the bootstrap's ``level``, ``replicates`` (``replicates_used``) and ``seed``, the fewest
    models the question needs (``models_needed``) and the question's ``verdict``."""

    coefficients: tuple[Coefficient, ...]
    n_models: int
    n_units: int
    n_observations: int
    n_tests: int
    df_resid: int
    sd_test: float
    sd_model: float
    sd_residual: float
    level: float
    replicates: int
    replicates_used: int
    seed: int
    models_needed: int
    too_few: bool
    verdict: str

    def table(self) -> pd.DataFrame:
        """One row per coefficient, with the question's counts and verdict beside it."""
        shared = {k: v for k, v in self.as_dict().items() if k not in ("coefficients", "verdict")}
        return pd.DataFrame([{**c.as_dict(), **shared, "question_verdict": self.verdict} for c in self.coefficients])


@dataclass(frozen=True)
class UnitFit(Result):
    """Outcome of :func:`unit_regression`: the term names, the unit-mean estimates and their percentile
    intervals (arrays in term order), the units' counts and the bootstrap's settings."""

    terms: tuple[str, ...]
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_models: int
    n_units: int
    df_resid: int
    level: float
    replicates: int
    replicates_used: int
    seed: int


def design(
    observations: pd.DataFrame,
    covariates: Mapping[str, Mapping],
    terms: Sequence[str],
    references: Mapping | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """The observations with one column per coefficient (``intercept``, each numeric covariate, one
    indicator per non-reference level of each categorical one: ``term[level]``), and those column names.

    ``covariates``: ``{model: {covariate: value}}``; a term that is a column of the observations reads it there
    (``dataset``, the finetuning dataset; ``cka``, measured per model and dataset). A categorical covariate's reference level is ``references[term]``, else its first level in
    sorted order. ValueError naming the covariate (and the model) for a covariate that a model lacks, and
    for a covariate of one value (a categorical one: one level) among the observations' models."""
    references = references or {}
    missing = [c for c in ("model", "value") if c not in observations]
    if missing:
        raise ValueError(f"observations need the columns model and value; missing: {', '.join(missing)}")
    frame = observations.reset_index(drop=True).copy()
    models = list(dict.fromkeys(frame["model"]))
    columns = [INTERCEPT]
    frame[INTERCEPT] = 1.0
    for term in terms:
        if term == DATASET and DATASET not in frame:
            raise ValueError("covariate 'dataset' needs the observations' dataset column")
        if term in frame:  # a covariate of the observations themselves: the dataset, or one measured per network
            values = frame[term]
        else:
            lacking = [m for m in models if term not in covariates.get(m, {}) or covariates[m][term] is None]
            if lacking:
                raise ValueError(f"covariate {term!r} is missing for model(s) {', '.join(map(repr, lacking))}")
            values = frame["model"].map({m: covariates[m][term] for m in models})
        if all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in values):
            if values.nunique() < 2:
                raise ValueError(f"covariate {term!r} has one value ({values.iloc[0]}) among the models analysed")
            frame[term] = values.astype(float)
            columns.append(term)
            continue
        levels = sorted(set(map(str, values)))
        if len(levels) < 2:
            raise ValueError(f"categorical covariate {term!r} has one level ({levels[0]!r}) among the models analysed")
        reference = str(references.get(term, levels[0]))
        if reference not in levels:
            raise ValueError(f"covariate {term!r}: reference level {reference!r} is not among {levels}")
        frame[term] = values.astype(str)
        for level in levels:
            if level != reference:
                frame[f"{term}[{level}]"] = (values.astype(str) == level).astype(float)
                columns.append(f"{term}[{level}]")
    return frame, columns


def _units(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(design rows, mean values, model index) of each unit: a model, or a model on one dataset."""
    keys = ["model", DATASET] if DATASET in frame and frame[DATASET].nunique() > 1 else ["model"]
    units = frame.groupby(keys, sort=False)[[*columns, "value"]].mean()
    model_codes = pd.factorize(units.index.get_level_values("model"))[0]
    return units[columns].to_numpy(), units["value"].to_numpy(), model_codes


def _batched_least_squares(weights: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Weighted least squares for each row of ``weights`` (replicates x units); NaN rows where X'WX is singular."""
    xtwx = np.einsum("bu,ui,uj->bij", weights, X, X)
    xtwy = np.einsum("bu,ui,u->bi", weights, X, y)
    singular = np.linalg.svd(xtwx, compute_uv=False)
    ok = singular[:, -1] > 1e-10 * singular[:, 0]
    out = np.full((len(weights), X.shape[1]), np.nan)
    out[ok] = np.linalg.solve(xtwx[ok], xtwy[ok][..., None])[..., 0]
    return out


def expanded_tail(level: float, n: int, p: int) -> float:
    """The lower percentile of Hesterberg's (2015) expanded percentile interval for ``n`` clusters and ``p``
    coefficients: the normal tail at ``sqrt(n / (n - p))`` times Student's t quantile on ``n - p`` degrees of
    freedom, so that few models widen the interval as a t interval would (``(1 - level) / 2`` as n grows)."""
    from scipy import stats

    if n <= p:
        return (1 - level) / 2
    return float(stats.norm.cdf(-math.sqrt(n / (n - p)) * stats.t.ppf((1 + level) / 2, n - p)))


def unit_regression(
    observations: pd.DataFrame,
    covariates: Mapping[str, Mapping],
    terms: Sequence[str],
    *,
    level: float = 0.95,
    replicates: int = 2000,
    seed: int = 0,
    references: Mapping | None = None,
) -> UnitFit:
    """The least squares of each unit's mean on the covariates, with a cluster-bootstrap percentile interval
    over models (``replicates`` draws of ``seed``): the interval part of :func:`meta_regression`."""
    level, replicates, seed = check_level(level), check_positive_int(replicates, "replicates"), check_seed(seed)
    frame, columns = design(observations, covariates, terms, references)
    X, y, model_of = _units(frame, columns)
    n_models, p = int(model_of.max()) + 1, len(columns)
    if len(y) <= p:
        raise ValueError(f"{len(y)} unit(s) cannot fit {p} coefficients ({', '.join(columns)})")
    estimate = _batched_least_squares(np.ones((1, len(y))), X, y)[0]
    if not np.isfinite(estimate).all():
        rank = np.linalg.matrix_rank(X)
        raise ValueError(
            f"covariates {', '.join(map(repr, terms))} are collinear among these models: their {p} coefficients "
            f"({', '.join(columns)}) have rank {rank}"
        )
    counts = resample_counts(n_models, replicates, np.random.default_rng(seed))
    boot = _batched_least_squares(counts[:, model_of], X, y)
    boot = boot[np.isfinite(boot).all(axis=1)]
    tail = expanded_tail(level, n_models, p)
    low, high = (np.quantile(boot, q, axis=0) if len(boot) else np.full(p, np.nan) for q in (tail, 1 - tail))
    return UnitFit(
        tuple(columns), estimate, low, high, n_models, len(y), len(y) - p, level, replicates, len(boot), seed
    )


def mixed_fit(frame: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """(fixed effects, their Wald SEs, {test, model, residual: SD}) of the REML fit with crossed random
    intercepts for the test (where there are several) and the model (where it has several rows)."""
    import statsmodels.api as sm
    from statsmodels.regression.mixed_linear_model import VCSpec

    names, labels, matrices = [], [], []
    for part in ("test", "model"):
        if part in frame and frame[part].nunique() > 1 and frame[part].nunique() < len(frame):
            dummies = pd.get_dummies(frame[part].astype(str)).to_numpy(dtype=float)
            names.append(part)
            labels.append([np.arange(dummies.shape[1])])
            matrices.append([dummies])
    X, y = frame[columns].to_numpy(), frame["value"].to_numpy(dtype=float)
    sds = {"test": 0.0, "model": 0.0}
    if not names:  # one row per model and no tests: ordinary least squares
        fit = sm.OLS(y, X).fit()
        return fit.params, fit.bse, {**sds, "residual": float(np.sqrt(fit.scale))}
    model = sm.MixedLM(y, X, groups=np.zeros(len(y)), exog_vc=VCSpec(names, labels, matrices))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter on a variance at the boundary (0)
        fit = model.fit(reml=True)
    p = len(columns)
    sds.update({name: float(np.sqrt(max(v, 0.0))) for name, v in zip(names, fit.vcomp)})
    return np.asarray(fit.fe_params), np.asarray(fit.bse)[:p], {**sds, "residual": float(np.sqrt(fit.scale))}


def models_rule(frame: pd.DataFrame, columns: list[str], per_coefficient: int = PER_COEFFICIENT) -> tuple[int, str]:
    """(the fewest models the rule asks for, what falls short in words, or '') for these coefficients."""
    n_models = frame["model"].nunique()
    needed = per_coefficient * (len(columns) - 1)
    if n_models < needed:
        return needed, f"{n_models} models for {len(columns) - 1} coefficient(s); at least {needed} are needed"
    for column in columns[1:]:
        term = column.split("[", 1)[0]
        if term != column and term != DATASET:
            for level, group in frame.groupby(frame[term].astype(str))["model"]:
                if group.nunique() < PER_LEVEL:
                    return needed, f"{term} = {level} has {group.nunique()} model; each level needs {PER_LEVEL}"
    return needed, ""


def _verdict(term: str, low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "no interval"
    if low > 0:
        return f"higher with {term}"
    if high < 0:
        return f"lower with {term}"
    return f"{term} not distinguishable from 0"


def meta_regression(
    observations: pd.DataFrame,
    covariates: Mapping[str, Mapping],
    terms: Sequence[str],
    *,
    level: float = 0.95,
    replicates: int = 2000,
    seed: int = 0,
    references: Mapping | None = None,
    per_coefficient: int = PER_COEFFICIENT,
) -> FactorsResult:
    """A measure (``observations``: model, value, and test, dataset, seed where they vary) against the models'
    ``covariates`` (``{model: {name: value}}``) for ``terms``: the mixed model, the unit-mean estimates with
    their cluster-bootstrap intervals, and a verdict per coefficient and for the question (module docstring)."""
    per_coefficient = check_positive_int(per_coefficient, "per_coefficient")
    fit = unit_regression(
        observations, covariates, terms, level=level, replicates=replicates, seed=seed, references=references
    )
    frame, columns = design(observations, covariates, terms, references)
    fixed, se, sds = mixed_fit(frame, columns)
    needed, short = models_rule(frame, columns, per_coefficient)
    coefficients = tuple(
        Coefficient(
            term,
            float(fit.estimate[i]),
            float(fit.ci_low[i]),
            float(fit.ci_high[i]),
            float(fixed[i]),
            float(se[i]),
            "" if term == INTERCEPT else (TOO_FEW if short else _verdict(term, fit.ci_low[i], fit.ci_high[i])),
        )
        for i, term in enumerate(columns)
    )
    if short:
        verdict = f"{TOO_FEW} ({short}: {per_coefficient} per coefficient)"
    else:
        verdict = "; ".join(c.verdict for c in coefficients[1:])
    return FactorsResult(
        coefficients,
        fit.n_models,
        fit.n_units,
        len(frame),
        int(frame["test"].nunique()) if "test" in frame else 0,
        fit.df_resid,
        sds["test"],
        sds["model"],
        sds["residual"],
        fit.level,
        fit.replicates,
        fit.replicates_used,
        fit.seed,
        max(needed, 0),
        bool(short),
        verdict,
    )

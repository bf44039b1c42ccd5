"""The meta-regression across models (biastransfer.stats.factors): known answers by simulation, the rule
for too few models, and named errors for bad covariates."""

import re

import numpy as np
import pandas as pd
import pytest
from test_tables import compile_latex, needs_latex

from biastransfer.stats.factors import TOO_FEW, design, expanded_tail, meta_regression, unit_regression


def simulated(rng, n_models=30, n_tests=10, slope=0.5, seeds=1):
    """Models with a covariate x, crossed random intercepts for the test and the model, and noise per seed."""
    x = rng.normal(size=n_models)
    models = [f"m{i}" for i in range(n_models)]
    rows = []
    test_effect = rng.normal(size=n_tests) * 0.8
    for i, model in enumerate(models):
        model_effect = rng.normal() * 0.5
        for j in range(n_tests):
            for seed in range(seeds):
                value = slope * x[i] + test_effect[j] + model_effect + rng.normal() * 0.5
                rows.append({"model": model, "test": f"t{j}", "seed": seed, "value": value})
    return pd.DataFrame(rows), {m: {"x": float(v)} for m, v in zip(models, x)}


def test_planted_slope_is_covered_in_at_least_90_of_100_simulations():
    rng = np.random.default_rng(11)
    covered = 0
    for seed in range(100):
        observations, covariates = simulated(rng)
        fit = unit_regression(observations, covariates, ["x"], replicates=500, seed=seed)
        covered += fit.ci_low[1] <= 0.5 <= fit.ci_high[1]
    assert covered >= 90


def test_null_slope_is_significant_in_at_most_8_of_100_simulations():
    rng = np.random.default_rng(12)
    significant = 0
    for seed in range(100):
        observations, covariates = simulated(rng, slope=0.0)
        fit = unit_regression(observations, covariates, ["x"], replicates=500, seed=seed)
        significant += not fit.ci_low[1] <= 0 <= fit.ci_high[1]
    assert significant <= 8


def test_balanced_design_unit_means_equal_the_mixed_model_and_the_verdict_finds_the_slope():
    observations, covariates = simulated(np.random.default_rng(3), n_models=40, slope=1.0, seeds=2)
    result = meta_regression(observations, covariates, ["x"], replicates=400, seed=1)
    intercept, slope = result.coefficients
    assert slope.estimate == pytest.approx(slope.estimate_mixed, abs=1e-6)
    assert slope.ci_low < 1.0 < slope.ci_high and slope.verdict == "higher with x"
    assert (result.n_models, result.n_units, result.n_observations, result.n_tests) == (40, 40, 800, 10)
    assert result.df_resid == 38 and not result.too_few
    assert result.sd_test > 0.3 and result.sd_residual == pytest.approx(0.5, rel=0.2)
    table = result.table()
    assert list(table["term"]) == ["intercept", "x"] and set(table["question_verdict"]) == {result.verdict}


def test_same_seed_same_interval_and_other_seed_another():
    observations, covariates = simulated(np.random.default_rng(4))
    one, two = (unit_regression(observations, covariates, ["x"], replicates=300, seed=s) for s in (5, 5))
    other = unit_regression(observations, covariates, ["x"], replicates=300, seed=6)
    assert np.array_equal(one.ci_low, two.ci_low) and not np.array_equal(one.ci_low, other.ci_low)


def test_categorical_covariate_is_the_difference_of_group_means():
    rng = np.random.default_rng(5)
    models = [f"m{i}" for i in range(24)]
    kinds = ["supervised", "self-supervised", "contrastive image-text"] * 8
    shift = {"supervised": 0.0, "self-supervised": -1.0, "contrastive image-text": 2.0}
    observations = pd.DataFrame(
        [
            {"model": m, "test": f"t{j}", "value": shift[k] + rng.normal() * 0.1}
            for m, k in zip(models, kinds)
            for j in range(3)
        ]
    )
    covariates = {m: {"objective": k} for m, k in zip(models, kinds)}
    fit = unit_regression(observations, covariates, ["objective"], references={"objective": "supervised"}, seed=0)
    estimates = dict(zip(fit.terms, fit.estimate))
    means = (
        observations.assign(kind=observations["model"].map(dict(zip(models, kinds)))).groupby("kind")["value"].mean()
    )
    assert estimates["objective[self-supervised]"] == pytest.approx(means["self-supervised"] - means["supervised"])
    assert estimates["objective[contrastive image-text]"] == pytest.approx(2.0, abs=0.1)
    assert "objective[supervised]" not in estimates


def test_within_model_dataset_effect_is_found():
    rng = np.random.default_rng(6)
    rows = [
        {
            "model": f"m{i}",
            "dataset": d,
            "test": f"t{j}",
            "value": base + (0.8 if d == "openimages" else 0.0) + rng.normal() * 0.2,
        }
        for i, base in enumerate(rng.normal(size=12))
        for d in ("coco", "openimages")
        for j in range(4)
    ]
    result = meta_regression(pd.DataFrame(rows), {f"m{i}": {} for i in range(12)}, ["dataset"], replicates=500)
    term = result.coefficients[1]
    assert term.term == "dataset[openimages]" and term.ci_low < 0.8 < term.ci_high and term.ci_low > 0
    assert (result.n_models, result.n_units, result.df_resid) == (12, 24, 22)


def test_too_few_models_for_the_coefficients_says_so_and_how_many():
    observations, covariates = simulated(np.random.default_rng(7), n_models=6)
    result = meta_regression(observations, covariates, ["x"], replicates=200)
    assert result.too_few and result.verdict.startswith(TOO_FEW) and result.models_needed == 10
    assert "6 models for 1 coefficient(s); at least 10 are needed" in result.verdict
    assert result.coefficients[1].verdict == TOO_FEW


def test_a_level_with_one_model_is_too_few():
    observations, covariates = simulated(np.random.default_rng(8), n_models=12)
    for i, model in enumerate(covariates):
        covariates[model]["objective"] = "self-supervised" if i == 0 else "supervised"
    result = meta_regression(observations, covariates, ["objective"], replicates=200)
    assert result.too_few and "objective = self-supervised has 1 model" in result.verdict


def test_missing_covariate_names_it_and_the_model():
    observations, covariates = simulated(np.random.default_rng(9), n_models=5)
    del covariates["m3"]["x"]
    with pytest.raises(ValueError, match=r"covariate 'x' is missing for model\(s\) 'm3'"):
        design(observations, covariates, ["x"])


def test_one_level_categorical_names_the_covariate():
    observations, covariates = simulated(np.random.default_rng(10), n_models=5)
    for values in covariates.values():
        values["objective"] = "supervised"
    with pytest.raises(ValueError, match=r"categorical covariate 'objective' has one level \('supervised'\)"):
        design(observations, covariates, ["objective"])


def test_expanded_tail_widens_for_few_models_and_tends_to_the_percentile():
    assert expanded_tail(0.95, 10, 2) < expanded_tail(0.95, 100, 2) < 0.025
    assert expanded_tail(0.95, 100_000, 2) == pytest.approx(0.025, abs=1e-4)


def _summaries(rng, n_models=24):
    """Summary tables of ``n_models`` models of three objectives over four iEATs: the pretrained d shifted by the
    objective, two finetuning datasets whose change of d is larger on openimages, and per-seed BTS rows."""
    kinds = ["supervised", "self-supervised", "contrastive image-text"]
    shift = {"supervised": 0.0, "self-supervised": -0.8, "contrastive image-text": 0.8}
    ieat, change, bts, covariates = [], [], [], {}
    for i in range(n_models):
        model, kind = f"m{i}", kinds[i % 3]
        covariates[model] = {"objective": kind, "parameters": 10 ** rng.uniform(6, 8)}
        for j in range(4):
            d = shift[kind] + rng.normal() * 0.3
            ieat.append(
                {
                    "analysis_set": "s",
                    "model": model,
                    "stage": "pretrained",
                    "finetune_dataset": None,
                    "seed": None,
                    "test": f"t{j}",
                    "effect_size": d,
                    "ci_low": d - 0.5,
                    "ci_high": d + 0.5,
                }
            )
            for dataset, step in (("coco", 0.0), ("openimages", 0.5)):
                for seed in (0, 1):
                    delta = step + rng.normal() * 0.2
                    change.append(
                        {
                            "analysis_set": "s",
                            "model": model,
                            "finetune_dataset": dataset,
                            "seed": seed,
                            "test": f"t{j}",
                            "delta_d": delta,
                            "pvalue_holm": 0.5,
                            "pvalue_bh": 0.5,
                        }
                    )
        for seed in ("0", "1", "pooled"):
            bts.append(
                {
                    "analysis_set": "s",
                    "model": model,
                    "finetune_dataset": "coco",
                    "seed": seed,
                    "kind": "intra",
                    "statistic": 0.5 + rng.normal() * 0.05,
                }
            )
    frames = {"ieat": pd.DataFrame(ieat), "change": pd.DataFrame(change), "bts": pd.DataFrame(bts)}
    return frames, covariates


FACTORS = {"level": 0.95, "replicates": 500, "seed": 0, "per_coefficient": 10}


def _question(name, measure, covariates, **more):
    return {
        "name": name,
        "measure": measure,
        "analysis_set": "s",
        "test": None,
        "stage": "finetuned",
        "datasets": [],
        "covariates": covariates,
        "references": {},
        "models": [],
        **more,
    }


def test_questions_from_the_summary_tables_find_the_planted_factors():
    from biastransfer.stats.factor_measures import factors_from_summaries

    summaries, covariates = _summaries(np.random.default_rng(20))
    questions = [
        _question(
            "d_by_objective",
            "d",
            ["objective", "parameters"],
            stage="pretrained",
            references={"objective": "supervised"},
        ),
        _question("change_by_dataset", "change_d", ["dataset"], references={"dataset": "coco"}),
        _question("bts_by_objective", "bts_intra", ["objective"]),
    ]
    models = {q["name"]: list(covariates) for q in questions}
    datasets = {"d_by_objective": [], "change_by_dataset": ["coco", "openimages"], "bts_by_objective": ["coco"]}
    table, values = factors_from_summaries(
        {**FACTORS, "questions": questions}, summaries, covariates, models=models, datasets=datasets
    )
    rows = table.set_index(["question", "term"])
    ssl = rows.loc[("d_by_objective", "objective[self-supervised]")]
    assert ssl["ci_high"] < 0 and ssl["verdict"] == TOO_FEW  # 3 coefficients need 30 models; there are 24
    assert rows.loc[("d_by_objective", "log10 parameters"), "n_observations"] == 96  # 24 models x 4 tests
    assert rows.loc[("bts_by_objective", "objective[self-supervised]"), "verdict"] == (
        "objective[self-supervised] not distinguishable from 0"
    )
    dataset = rows.loc[("change_by_dataset", "dataset[openimages]")]
    assert dataset["ci_low"] > 0 and (dataset["n_models"], dataset["n_units"]) == (24, 48)
    assert rows.loc[("bts_by_objective", "intercept"), "n_observations"] == 48  # the seeds, not the pooled row
    assert set(values["question"]) == set(datasets) and (values["covariate"].iloc[0] == "objective")
    assert len(values[values["question"] == "change_by_dataset"]) == 48


def test_a_model_the_summaries_lack_is_left_out_and_named():
    from biastransfer.stats.factor_measures import factors_from_summaries

    summaries, covariates = _summaries(np.random.default_rng(21))
    question = _question("d_by_objective", "d", ["objective"], stage="pretrained")
    factors = {**FACTORS, "questions": [question]}
    table, _ = factors_from_summaries(
        factors,
        summaries,
        covariates,
        models={"d_by_objective": [*covariates, "broken"]},
        datasets={"d_by_objective": []},
        left_out={"broken": "failed its zoo check: no weights"},
    )
    assert set(table["left_out"]) == {"broken (failed its zoo check: no weights)"} and set(table["n_models"]) == {24}
    with pytest.raises(ValueError, match=r"'d_by_objective': no rows of measure d on 's' for model\(s\) broken"):
        factors_from_summaries(
            factors,
            summaries,
            covariates,
            models={"d_by_objective": [*covariates, "broken"]},
            datasets={"d_by_objective": []},
        )


def test_the_script_writes_the_table_the_values_and_the_covariates_with_their_sources(tmp_path):
    import importlib.util
    from pathlib import Path

    summaries, covariates = _summaries(np.random.default_rng(22))
    for name, frame in summaries.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    question = _question("d_by_objective", "d", ["objective"], stage="pretrained")
    settings = {
        "factors": {**FACTORS, "questions": [question]},
        "models": {"d_by_objective": list(covariates)},
        "datasets": {"d_by_objective": []},
        "covariates": {
            m: {k: {"value": v, "source": "https://example.org"} for k, v in c.items()} for m, c in covariates.items()
        },
        "alpha": 0.05,
        "adjust": "holm",
    }
    script = Path(__file__).parents[1] / "workflow" / "scripts" / "factors.py"
    spec = importlib.util.spec_from_file_location("factors_script", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from biastransfer.workflow.rules.analysis import FactorsSettings

    out = {k: str(tmp_path / f"out_{k}.csv") for k in ("table", "values", "covariates_table")}
    module.main(ieat=str(tmp_path / "ieat.csv"), settings=FactorsSettings.from_mapping(settings), **out)
    table, sources = pd.read_csv(out["table"]), pd.read_csv(out["covariates_table"])
    assert list(table["term"]) == ["intercept", "objective[self-supervised]", "objective[supervised]"]
    assert len(sources) == 48 and set(sources["source"]) == {"https://example.org"}


def test_a_numeric_covariate_of_one_value_names_it():
    observations, covariates = simulated(np.random.default_rng(13), n_models=5)
    for values in covariates.values():
        values["x"] = 224
    with pytest.raises(ValueError, match=r"covariate 'x' has one value \(224\)"):
        design(observations, covariates, ["x"])


def _factor_tables():
    from biastransfer.stats.factor_measures import factors_from_summaries

    summaries, covariates = _summaries(np.random.default_rng(23))
    questions = [
        _question("d_by_objective", "d", ["objective"], stage="pretrained", references={"objective": "supervised"}),
        _question("d_by_parameters", "d", ["parameters"], stage="pretrained"),
        _question("change_by_dataset", "change_d", ["dataset", "objective"], references={"dataset": "coco"}),
    ]
    datasets = {"d_by_objective": [], "d_by_parameters": [], "change_by_dataset": ["coco", "openimages"]}
    return factors_from_summaries(
        {**FACTORS, "questions": questions},
        summaries,
        covariates,
        models={q["name"]: list(covariates) for q in questions},
        datasets=datasets,
        left_out={"gone": "failed its zoo check: no weights"},
    )


@needs_latex
def test_the_factors_table_compiles_and_the_figure_prints(tmp_path):
    from biastransfer.report.factors import factors_figure, factors_frame, factors_latex
    from biastransfer.report.style import print_size_problems

    table, values = _factor_tables()
    text = factors_latex(table)
    compile_latex(text, tmp_path, "factors")
    assert "Too few models: change\\_by\\_dataset (24 models, 30 needed)" in text
    assert list(factors_frame(table).columns[:4]) == ["question", "question_verdict", "term", "verdict"]
    fig = factors_figure(values, table)
    assert print_size_problems(fig) == [] and len([a for a in fig.axes if a.has_data()]) == 3
    assert "log10 parameters" in [a.get_xlabel() for a in fig.axes]


def test_the_findings_word_each_question_with_its_models_and_degrees_of_freedom():
    from biastransfer.report.findings import describe_factors

    table, _ = _factor_tables()
    text = "\n".join(describe_factors(table))
    assert "- **d_by_objective** (d on s; 24 models, 96 observations, 21 residual degrees of freedom): " in text
    assert "objective[self-supervised] = -0.8" in text and "(lower with objective[self-supervised])" in text
    assert "**change_by_dataset**" in text and "too few models (24 models for 3 coefficient(s)" in text
    assert describe_factors(None) == [] and describe_factors(table.iloc[0:0]) == []


def test_collinear_covariates_are_named():
    observations, covariates = simulated(np.random.default_rng(14), n_models=12)
    for values in covariates.values():
        values["twice"] = 2 * values["x"]
    with pytest.raises(ValueError, match=r"covariates 'x', 'twice' are collinear among these models: .* rank 2"):
        unit_regression(observations, covariates, ["x", "twice"], replicates=100)


def _cka_summaries(rng, n_models=40, slope=0.6):
    """Per-seed BTS and change of d of models finetuned on coco and openimages, each planted as ``slope`` times the
    model's pooled linear CKA on that dataset plus noise; the CKA summary's per-seed rows hold other values, so only
    its pooled finetuned rows can give the slope back."""
    bts, change, cka = [], [], []
    for i in range(n_models):
        model = f"m{i}"
        for dataset in ("coco", "openimages"):
            value = rng.uniform(0.2, 0.95)
            where = {"analysis_set": "s", "model": model, "finetune_dataset": dataset}
            cka += [
                {**where, "network": "finetuned", "seed": "pooled", "cka": value},
                {**where, "network": "finetuned", "seed": "0", "cka": rng.uniform()},
                {**where, "network": "scratch", "seed": "pooled", "cka": rng.uniform()},
            ]
            cka.append({**where, "analysis_set": "other", "network": "finetuned", "seed": "pooled", "cka": 0.5})
            for seed in ("0", "1"):
                bts.append({**where, "seed": seed, "kind": "intra", "statistic": slope * value + rng.normal() * 0.05})
                for j in range(3):
                    delta = slope * value + rng.normal() * 0.1
                    change.append({**where, "seed": seed, "test": f"t{j}", "delta_d": delta})
    return {"ieat": pd.DataFrame(), "change": pd.DataFrame(change), "bts": pd.DataFrame(bts), "cka": pd.DataFrame(cka)}


@pytest.mark.parametrize(
    ("measure", "datasets", "units"), [("bts_intra", ["coco"], 40), ("change_d", ["coco", "openimages"], 80)]
)
def test_a_planted_slope_on_the_pooled_cka_is_found(measure, datasets, units):
    from biastransfer.stats.factor_measures import factors_from_summaries

    summaries = _cka_summaries(np.random.default_rng(30))
    question = _question("by_cka", measure, ["cka"])
    models = [f"m{i}" for i in range(40)]
    table, values = factors_from_summaries(
        {**FACTORS, "questions": [question]},
        summaries,
        {m: {} for m in models},
        models={"by_cka": models},
        datasets={"by_cka": datasets},
    )
    slope = table.set_index("term").loc["cka"]
    assert slope["ci_low"] < 0.6 < slope["ci_high"] and slope["ci_low"] > 0.4
    assert slope["verdict"] == "higher with cka" and (slope["n_models"], slope["n_units"]) == (40, units)
    pooled = summaries["cka"].query("analysis_set == 's' and network == 'finetuned' and seed == 'pooled'")
    expected = pooled.set_index(["model", "finetune_dataset"])["cka"]
    drawn = values.set_index(["model", "dataset"])["covariate_value"]
    assert set(values["covariate"]) == {"cka"} and drawn.to_numpy() == pytest.approx(expected.loc[drawn.index])


def test_a_model_without_cka_is_named_as_a_missing_covariate():
    from biastransfer.stats.factor_measures import factors_from_summaries

    summaries = _cka_summaries(np.random.default_rng(31), n_models=12)
    summaries["cka"] = summaries["cka"][~summaries["cka"]["model"].isin(["m3", "m7"])]
    question = _question("by_cka", "bts_intra", ["cka"])
    models = [f"m{i}" for i in range(12)]
    with pytest.raises(
        ValueError,
        match=re.escape("factors.questions.by_cka.covariates: cka is missing for model(s) m3, m7 (no value in "),
    ):
        factors_from_summaries(
            {**FACTORS, "questions": [question]},
            summaries,
            {m: {} for m in models},
            models={"by_cka": models},
            datasets={"by_cka": ["coco"]},
        )

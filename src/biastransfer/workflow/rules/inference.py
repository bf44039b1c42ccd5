"""Settings of the rules that run a model's networks over images: its embeddings of the analysis sets
(rules/embed.smk), at several layers (rules/layers.smk), and its trained networks' predictions on the test
splits (rules/predictions.smk). Each is one job per model (and analysis set) for all of its networks."""

from __future__ import annotations

from dataclasses import dataclass

from biastransfer.workflow.settings import Settings
from biastransfer.zoo import embed_settings


@dataclass(frozen=True)
class InferenceOptions(Settings):
    """``analysis.embed``: ``batch_size`` images a batch (by the model's size: ``analysis.embed.sizes``),
    decoded by ``num_workers`` loader workers, on ``device``, with bf16 autocast where it has it (``amp``);
    the fields of ``biastransfer.models.features.Inference``."""

    batch_size: int
    num_workers: int
    device: str
    amp: bool

    @classmethod
    def of(cls, plan, model: str) -> InferenceOptions:
        embed = plan.config["analysis"]["embed"]
        return cls.pick(embed, batch_size=embed_settings(plan.config["models"][model], embed)[0])


@dataclass(frozen=True)
class Networks(Settings):
    """A model's networks by stage (``stages[i]``: the i-th checkpoint and the i-th output of the job), the
    keys of its entry that shape them (``Plan.network_entry``) and how they are run."""

    stages: list
    entry: dict
    inference: InferenceOptions

    @staticmethod
    def of(plan, model: str, stages: list) -> dict:
        return {"stages": stages, "entry": plan.network_entry(model), "inference": InferenceOptions.of(plan, model)}


@dataclass(frozen=True)
class EmbedSettings(Networks):
    """Every network of one model (pretrained, finetuned, scratch) on an analysis set."""

    rule = "embed"

    @classmethod
    def build(cls, plan, model: str) -> EmbedSettings:
        return cls(**Networks.of(plan, model, plan.embedded_stages))


@dataclass(frozen=True)
class EmbedLayersSettings(Networks):
    """The pretrained and every finetuned network of one model at its profiled ``layers`` (empty: the
    default profile), each pooled as ``pooling`` says (``models.<m>.layer_pooling``, else
    ``analysis.layers.pooling``)."""

    rule = "embed_layers"
    layers: list
    pooling: str

    @classmethod
    def build(cls, plan, model: str) -> EmbedLayersSettings:
        entry = plan.model_entry(model)
        pooling = entry.get("layer_pooling", plan.config["analysis"]["layers"]["pooling"])
        return cls(**Networks.of(plan, model, plan.stages), layers=entry.get("layers", []), pooling=pooling)


@dataclass(frozen=True)
class PredictSettings(Networks):
    """Every finetuned and scratch network of one model on the test split of the dataset it was trained on
    (``datasets[j]``: the j-th split of the job)."""

    rule = "predict"
    datasets: list

    @classmethod
    def build(cls, plan, model: str) -> PredictSettings:
        return cls(**Networks.of(plan, model, plan.predicted_stages), datasets=plan.predicted_datasets)

"""Published model architectures a scenario can start from (``job.model: {preset: llama3-70b}``).

A preset fills the ``job.model`` keys it knows; keys the scenario gives override it, so a preset is
a starting point, not a lock. Each entry names its source. Attention variants the step model does
not distinguish (DeepSeek's multi-head latent attention) are approximated by plain multi-head
attention with the published head count, which the label says ("-style").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelPreset:
    """One published architecture: its ``job.model`` keys (``moe`` nested) and where they come from."""

    slug: str
    label: str
    model: dict[str, Any]
    source: str


MODEL_PRESETS: dict[str, ModelPreset] = {
    p.slug: p
    for p in (
        ModelPreset(
            "gpt3-175b",
            "GPT-3 175B",
            {
                "layers": 96,
                "hidden": 12288,
                "heads": 96,
                "ffn_hidden": 49152,
                "vocab": 50257,
                "seq_len": 2048,
                "mlp": "gelu",
            },
            "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1 (vocab: GPT-2 BPE).",
        ),
        ModelPreset(
            "llama3-8b",
            "Llama 3 8B",
            {
                "layers": 32,
                "hidden": 4096,
                "heads": 32,
                "kv_heads": 8,
                "ffn_hidden": 14336,
                "vocab": 128256,
                "seq_len": 8192,
                "mlp": "swiglu",
            },
            "Llama Team 2024, The Llama 3 Herd of Models, Table 3.",
        ),
        ModelPreset(
            "llama3-70b",
            "Llama 3 70B",
            {
                "layers": 80,
                "hidden": 8192,
                "heads": 64,
                "kv_heads": 8,
                "ffn_hidden": 28672,
                "vocab": 128256,
                "seq_len": 8192,
                "mlp": "swiglu",
            },
            "Llama Team 2024, The Llama 3 Herd of Models, Table 3.",
        ),
        ModelPreset(
            "llama3-405b",
            "Llama 3 405B",
            {
                "layers": 126,
                "hidden": 16384,
                "heads": 128,
                "kv_heads": 8,
                "ffn_hidden": 53248,
                "vocab": 128256,
                "seq_len": 8192,
                "mlp": "swiglu",
            },
            "Llama Team 2024, The Llama 3 Herd of Models, Table 3.",
        ),
        ModelPreset(
            "mixtral-8x7b",
            "Mixtral 8×7B",
            {
                "layers": 32,
                "hidden": 4096,
                "heads": 32,
                "kv_heads": 8,
                "ffn_hidden": 14336,
                "vocab": 32000,
                "seq_len": 32768,
                "mlp": "swiglu",
                "moe": {"experts": 8, "top_k": 2, "expert_ffn_hidden": 14336},
            },
            "Jiang et al. 2024, Mixtral of Experts, Table 1 (context length 32k).",
        ),
        ModelPreset(
            "deepseek-v3-style",
            "DeepSeek-V3-style MoE (671B)",
            {
                "layers": 61,
                "hidden": 7168,
                "heads": 128,
                "ffn_hidden": 18432,
                "vocab": 129280,
                "seq_len": 4096,
                "mlp": "swiglu",
                "moe": {"experts": 256, "top_k": 8, "expert_ffn_hidden": 2048},
            },
            "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, §4.2 (256 routed experts, 8 active, "
            "expert FFN 2048; the shared expert and MLA are not modelled: plain MHA, 128 heads).",
        ),
    )
}


def apply_preset(model: Any) -> Any:
    """``job.model`` with its ``preset`` expanded: the preset's keys, then the scenario's own
    (explicit keys win; a null key keeps the preset's). Anything else is returned unchanged (the
    section reader reports a wrong type or an unknown preset naming the field)."""
    if not isinstance(model, dict) or model.get("preset") is None:
        return model
    preset = MODEL_PRESETS.get(model["preset"])
    if preset is None:
        return model
    given = {k: v for k, v in model.items() if v is not None}
    merged = {**preset.model, **given}
    if isinstance(preset.model.get("moe"), dict) and isinstance(given.get("moe"), dict):
        merged["moe"] = {**preset.model["moe"], **{k: v for k, v in given["moe"].items() if v is not None}}
    return merged

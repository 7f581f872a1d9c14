"""Settings precedence and masking, profiles, auth parsing, salts, model folder verification, schema limits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from serving.auth import DEV_KEY, ApiKeyAuth
from serving.engine.model_prep import MANIFEST, MANIFEST_VERSION, sha256_file, verify_manifest
from serving.engine.profiles import load_profile
from serving.errors import AuthenticationError, ConfigError, InvalidRequestError, SchemaTooComplexError
from serving.isolation import CacheSalter, load_or_create_secret
from serving.schema_guard import check_static_limits, schema_shape
from serving.settings import SchemaGuardSettings, load_settings


def test_environment_overrides_yaml_and_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "planstack.yaml"
    config.write_text("gateway:\n  port: 8100\nisolation:\n  scope: session\n")
    monkeypatch.setenv("PLANSTACK_CONFIG", str(config))
    monkeypatch.setenv("PLANSTACK_GATEWAY__PORT", "9100")
    settings = load_settings()
    assert settings.gateway.port == 9100  # env beats the file
    assert settings.isolation.scope == "session"  # the file beats the default
    assert settings.engine.port == 8001  # default


def test_unknown_or_invalid_settings_are_rejected(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "planstack.yaml"
    config.write_text("gateway:\n  prot: 1\n")
    monkeypatch.setenv("PLANSTACK_CONFIG", str(config))
    with pytest.raises(ValidationError):
        load_settings()
    monkeypatch.delenv("PLANSTACK_CONFIG")
    monkeypatch.setenv("PLANSTACK_ISOLATION__SCOPE", "everyone")
    with pytest.raises(ValidationError):
        load_settings()


def test_config_show_masks_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANSTACK_API_KEYS", "secret-key-123=tenantA")
    monkeypatch.setenv("PLANSTACK_SECRET", "server-secret-value")
    text = json.dumps(load_settings().masked())
    assert "secret-key-123" not in text and "server-secret-value" not in text
    assert text.count("********") == 2


def test_profiles_load_and_bad_names_fail_clearly() -> None:
    cpu = load_profile("smollm2-cpu")
    assert cpu.device == "cpu" and cpu.source.kind == "gguf-package"
    assert load_profile("phi3-mini-gpu").max_model_len == 4096
    with pytest.raises(ConfigError, match="known profiles"):
        load_profile("gpt-17")
    with pytest.raises(ConfigError, match="invalid profile name"):
        load_profile("../../etc/passwd")


def test_api_key_spec_parsing() -> None:
    auth = ApiKeyAuth.from_spec("key-for-a-123=tenantA, key-for-b-123=tenantB")
    assert auth.authenticate("Bearer key-for-b-123").tenant == "tenantB"
    with pytest.raises(AuthenticationError):
        auth.authenticate(f"Bearer {DEV_KEY}")  # the dev key is off once real keys exist
    for bad in ("nokey", "short=tenantA", "key-for-a-123=bad tenant", "key-for-a-123=a,key-for-a-123=b"):
        with pytest.raises(ConfigError):
            ApiKeyAuth.from_spec(bad)
    dev = ApiKeyAuth.from_spec(None)
    assert dev.dev_mode and dev.authenticate(f"Bearer {DEV_KEY}").tenant == "dev"
    assert dev.authenticate(f"Bearer {DEV_KEY}").approver  # the one development key does everything


def test_api_keys_carry_the_approver_scope_and_a_non_secret_id() -> None:
    spec = "key-for-app-123=tenantA, key-for-ops-123=tenantA:approver ,key-for-b-123=tenantB"
    auth = ApiKeyAuth.from_spec(spec, secret=b"s" * 32)
    app, ops, bob = (auth.authenticate(f"Bearer {key}") for key in ("key-for-app-123", "key-for-ops-123", "key-for-b-123"))
    assert (app.tenant, app.approver) == ("tenantA", False) and (ops.tenant, ops.approver) == ("tenantA", True)
    assert not bob.approver  # `key=tenant` as before: a key without the scope
    ids = {who.key_id for who in (app, ops, bob)}
    assert len(ids) == 3 and all(i is not None and i.startswith("key_") and "key-for" not in i for i in ids)
    again = ApiKeyAuth.from_spec(spec, secret=b"s" * 32).authenticate("Bearer key-for-ops-123")
    other_secret = ApiKeyAuth.from_spec(spec, secret=b"t" * 32).authenticate("Bearer key-for-ops-123")
    assert again.key_id == ops.key_id != other_secret.key_id  # stable per server secret, unguessable without it
    for bad in ("key-for-a-123=tenantA:admin", "key-for-a-123=tenantA:", "key-for-a-123=:approver"):
        with pytest.raises(ConfigError, match="approver"):
            ApiKeyAuth.from_spec(bad)


def test_salts_are_valid_for_vllm_and_scoped(tmp_path: Path) -> None:
    secret = load_or_create_secret(tmp_path / "secret")
    assert load_or_create_secret(tmp_path / "secret") == secret  # created once, then reused
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600
    tenant = CacheSalter("tenant", secret)
    salt = tenant.salt("tenantA")
    assert len(salt) == 64 and not set(salt) & set("@/\\")
    assert salt == tenant.salt("tenantA") != tenant.salt("tenantB")
    assert CacheSalter("tenant", b"another-secret-0123456789").salt("tenantA") != salt
    with pytest.raises(InvalidRequestError):
        CacheSalter("session", secret).salt("tenantA", "a/b")


def test_model_folder_verification_detects_tampering(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"weights")
    (tmp_path / "config.json").write_text("{}")
    files = {name: sha256_file(tmp_path / name) for name in ("model.safetensors", "config.json")}
    (tmp_path / MANIFEST).write_text(json.dumps({"version": MANIFEST_VERSION, "files": files}))
    assert verify_manifest(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"weightz")
    assert not verify_manifest(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    assert not verify_manifest(tmp_path)
    assert not verify_manifest(tmp_path / "missing")


def test_schema_static_limits() -> None:
    limits = SchemaGuardSettings(max_depth=4, max_nodes=10, max_schema_bytes=500)
    assert schema_shape({"a": {"b": [1, {"c": 2}]}}) == (4, 4)
    check_static_limits({"type": "object", "properties": {"a": {"type": "string"}}}, limits)
    with pytest.raises(SchemaTooComplexError, match="nests"):
        check_static_limits({"a": {"b": {"c": {"d": {"e": {}}}}}}, limits)
    with pytest.raises(SchemaTooComplexError, match="sub-schemas"):
        check_static_limits({"anyOf": [{"type": "string"} for _ in range(12)]}, limits)
    with pytest.raises(SchemaTooComplexError, match="bytes"):
        check_static_limits({"description": "x" * 600}, limits)
    with pytest.raises(InvalidRequestError, match="local"):
        check_static_limits({"$ref": "https://example.com/schema.json"}, limits)


def test_profiles_carry_planner_defaults_that_explicit_settings_override() -> None:
    from planner.config import PlannerConfig
    from serving.engine.profiles import load_profile

    gpu = load_profile("phi3-mini-gpu")
    assert gpu.planner_config(PlannerConfig()).tool_choice == "model"
    assert gpu.planner_config(PlannerConfig()).grounding == "free"
    assert gpu.planner_config(PlannerConfig(grounding="hybrid")).grounding == "hybrid"  # the user's choice wins
    assert gpu.planner_config(PlannerConfig()).stages.learned_refs is False  # every value decodable on Phi-3
    assert load_profile("smollm2-cpu").planner_config(PlannerConfig()).stages.learned_refs is True
    cpu = load_profile("smollm2-cpu").planner_config(PlannerConfig())
    assert (cpu.tool_choice, cpu.grounding) == ("proposal", "grounded")

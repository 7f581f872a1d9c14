"""A real gateway configured only from the environment (PLANSTACK_*), for tests that run it in its
own process, away from the GIL of their client threads:

    python -m uvicorn --factory tests.reliability.env_gateway:app --host 127.0.0.1 --port PORT
"""

from __future__ import annotations

from fastapi import FastAPI

from serving.app import create_app
from serving.settings import load_settings
from tests.conftest import FAKE_MODEL


def app() -> FastAPI:
    return create_app(load_settings(), engine_model=FAKE_MODEL)

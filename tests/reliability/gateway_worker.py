"""Child process of the gateway-restart test: a real gateway (uvicorn) over the demo tools plus the
test tools of `helpers.fault_registry`, on a temp PLANSTACK_HOME.

python -m tests.reliability.gateway_worker HOME PORT CALLS_FILE [BLOCK_LABEL [RELEASE_FILE]]
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn
from pydantic import SecretStr

from serving.app import create_app
from serving.settings import EngineSettings, Settings
from serving.stack import build_stack
from tests.conftest import API_KEYS, FAKE_MODEL
from tests.reliability.helpers import fault_registry


def main(
    home: str, port: str, calls_file: str, block_label: str | None = None, release_file: str | None = None
) -> None:
    # No engine behind this gateway: runs of given plans never need one.
    settings = Settings(
        home=Path(home), api_keys=SecretStr(API_KEYS), engine=EngineSettings(port=1, connect_timeout_s=0.5)
    )
    release = None if release_file is None else Path(release_file)
    registry = fault_registry(Path(calls_file), block_label=block_label, release_file=release)
    app = create_app(build_stack(settings, engine_model=FAKE_MODEL, registry=registry))
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main(*sys.argv[1:6])

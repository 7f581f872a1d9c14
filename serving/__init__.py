"""planstack gateway: OpenAI-compatible HTTP API, engine management, configuration and CLI."""

__version__ = "0.1.0"

"""An example OpenAPI service: `python -m examples.openapi_service --port 8766`."""

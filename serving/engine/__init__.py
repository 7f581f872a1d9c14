"""The vLLM engine: model profiles, weight preparation and the managed server process."""

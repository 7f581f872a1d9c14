"""One thin router per endpoint: validate, authenticate, delegate to a service."""

"""Small runnable services to connect planstack runs to (see each package's docstring)."""

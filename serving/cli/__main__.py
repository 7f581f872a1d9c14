"""`python -m serving.cli …`: the `planstack` command."""

from serving.cli import main

main()

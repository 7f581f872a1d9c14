"""planstack executors: tool registry and the DAG scheduler that runs plans."""

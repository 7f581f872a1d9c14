"""The shared contract of planstack: what planner, executors, retrieval and serving agree on.

- `contract.plan`: the plan model (a DAG of tool calls) and its reference syntax;
- `contract.conditions`: the success-condition language and its static bounds;
- `contract.errors`: the one root of every planstack error;
- `contract.demonstrations`, `contract.embedding`: the small protocols the planner and the retrieval
  layer meet on (solved requests, text embeddings).

This package depends on no other planstack package; every other package may depend on it.
"""

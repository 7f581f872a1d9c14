"""planstack planner: turns a request into a validated plan (a DAG of tool calls)."""

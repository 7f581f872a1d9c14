"""The benchmark harness behind `planstack bench`: latency (planner-only, end-to-end, chat streaming),
plan accuracy with baselines and an online mode, reports (JSON, Markdown, PNG) and report diffs.

Modules: `stats` (percentiles, arrival schedules), `datasets` (our jsonl, NESTFUL), `latency`,
`accuracy` (+ `planners`, `execution`), `report` (metadata, writing, compare), `markdown`, `plots`, `cli`.
"""

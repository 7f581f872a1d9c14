"""Runs behind the gateway: `/v1/runs` (plan + execute, poll, follow as SSE, resume), tenant-scoped.

The executors' typed run errors reach the client through the one error funnel; a run of another
tenant answers like an unknown id (404).
"""

"""Plans behind the gateway: `POST /v1/plans`, the virtual `planner` chat model and the runs' re-planner.

Everything is tenant-scoped: the tenant comes from the API key, the cache salt from the server's
isolation scope, never from the client. A planning request is admitted to one of its tenant's engine
slots before the planner starts (429 when none is free).
"""

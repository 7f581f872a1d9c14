"""The one SQL run store: its logic written once (`runs`, `events`, `leases`, `steering`, `cache`,
`retention`, one module per protocol of `executors.stores.base`), its tables (`schema`), and the
`SqlDialect` that runs it on SQLite (`executors.stores.sqlite`) or PostgreSQL
(`executors.stores.postgres`)."""

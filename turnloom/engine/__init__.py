"""The engine: the core that hosts agents on one loop (`core`), and its rooms, lowest first.

`support` (clocks, logs, bounded quoting, argument rejections, memory care) ← `graph` (the graph
builder, typed node params) ← `tools` (tool-call formats and parsing) ← `inference` (the model
interface and backends) ← `turns` (a turn's run) ← `durable` (snapshots and stores) ← `core`.
Each room imports only the rooms below it and `turnloom.states`; `docs/architecture.md` has the
map.
"""

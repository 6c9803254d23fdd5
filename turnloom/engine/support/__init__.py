"""What every room of the engine leans on: clocks, structured logs, bounded quoting of host
values, the argument rejections, and memory care (collector pauses, GIL hand-over, teardown).

May import only `turnloom.states`.
"""

"""Agents that outlive a process: snapshots, reading and reviving them, the durable agent that
writes through to a store, leases for several workers, and the stores (`store`).

May import `turns` and every room below it.
"""

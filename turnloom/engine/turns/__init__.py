"""A turn's run: the agent core and its operations, the executor that walks the graph, the node
executors (`nodes`), dialog and projection, tool exchanges, results and the stall watch.

May import `inference`, `tools`, `graph`, `support` and `turnloom.states`.
"""

"""Graphs, typed params, node executors, agents, the turn executor, backends and clocks."""

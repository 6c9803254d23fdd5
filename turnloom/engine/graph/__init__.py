"""Graphs as a game designer writes them: the builder (`GraphDescription`) and its compiled
form, the typed node params and their field metadata, prompt templates, graph data and diagrams.

May import `support` and `turnloom.states`.
"""

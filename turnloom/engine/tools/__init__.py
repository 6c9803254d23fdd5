"""Tool calls as models write them: the call families, their text formats, parsing a reply into
calls, and the declared-type reading of arguments.

May import `graph`, `support` and `turnloom.states`.
"""

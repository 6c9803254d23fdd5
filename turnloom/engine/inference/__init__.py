"""Inference: the interface every model backend implements (`base`), the model catalog, the
scripted `mock` and its JSON scripts (`mock_script`, for `serve --mock SCRIPT`), llama.cpp in
process (`llama`) and serving engines over HTTP (`served`).

May import `tools`, `graph`, `support` and `turnloom.states`. (`turnloom.models` is the public
face of this room.)
"""

"""The inspector: a web page that shows an engine's agents live (the graph with the current
node lit, the turn machine's state, a timeline of every turn) and acts on a paused turn through
the same machine and codes as the API. Served by aiohttp (the `inspect` extra) on the engine's
loop, from static files shipped here. May import `protocol`, `engine` and `states`."""

"""The sans-IO wire side and the error table: error codes and the exception hierarchy
(`errors`), the rejection -> code table (`codes`), msgpack frames (`frames`) and the message
catalog (`messages`, `records`, `graph_codec`). No sockets, no threads: the client lives in
`turnloom.host`, the server in `turnloom.server`. May import `turnloom.engine` and
`turnloom.states`."""

"""Phone-line calls: turnscope plays the carrier on an agent's media-stream websocket."""

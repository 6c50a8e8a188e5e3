"""The two parties of a call, as every stage names them (no dependencies: scoring reads it)."""

CALLER = "caller"
AGENT = "agent"
CHANNELS = (CALLER, AGENT)

"""The agent's OpenTelemetry spans, received over OTLP/HTTP during a call (receiver.py)."""

"""Interop tests' third-party agents (a stock pipecat bot in its own virtual environment)."""

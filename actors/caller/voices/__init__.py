"""Caller voices: one module per engine (espeak-ng as a process, a Piper voice in-process with
onnxruntime) and the ``engine:name`` syntax a scenario names them with (`spec`)."""

"""ASR: VAD, endpointing, turn assembly and transcription."""

"""Capture: sources of timestamped PCM per channel (file replay, WebRTC, sound devices)."""

"""The reference agent: its behaviour, its WebRTC server, its sound-device mode."""

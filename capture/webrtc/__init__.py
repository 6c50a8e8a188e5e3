"""WebRTC calls: signaling, the call as a source, the paced track, receiving."""

"""Sound-device calls: streams, their clocks, playback, capture, calibration."""

"""File replay: decoding any recording in blocks, and the file source."""

"""The evidence bundle: its documents, manifest, continuity report, validation."""

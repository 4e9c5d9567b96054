"""The scenario format: its sections, fields and limits, presets, the bounded YAML loader and
the one error type."""

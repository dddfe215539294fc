"""Chat-model protocol, messages, prompt templates, limits and responses."""

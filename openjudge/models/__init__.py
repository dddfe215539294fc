"""Chat and reward-model protocols, the transport protocol, the call engine, limits, cache and responses."""

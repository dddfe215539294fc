"""Framework adapters (VERL first)."""

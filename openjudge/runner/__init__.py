"""GradingRunner, mappers and aggregators."""

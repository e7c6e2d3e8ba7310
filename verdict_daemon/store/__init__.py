"""The state store: state.duckdb's schema and migrations, and the only SQL against it."""

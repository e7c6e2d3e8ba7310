"""Import paths of the seed library (`verdict.common.judge`), kept as aliases of the real modules."""

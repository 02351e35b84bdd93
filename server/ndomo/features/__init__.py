"""Features above the engine: the turn and session commands, approvals, undo, recovery,
health, the catalog, the turn recording and project instructions."""

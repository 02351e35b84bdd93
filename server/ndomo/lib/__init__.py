"""Libraries the tools share: workspace access (workspace.py), search (search/), code
outline (code/). Primitives, no features."""

"""The plan store: the only package that speaks SQL."""

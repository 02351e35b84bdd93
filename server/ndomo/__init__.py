"""ndomo: a language server that puts a disciplined pair of coding agents into any LSP editor."""

__version__ = "0.1.0"

"""`ndomo acp`: the Agent Client Protocol front end (JSON-RPC over stdio, the editor
spawns the agent), on the same engine as the language server and the CLI."""

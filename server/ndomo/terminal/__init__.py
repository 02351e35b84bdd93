"""The terminal front end: the `ndomo` command line (cli.py, args.py), `ndomo run`
(run.py, host.py) and `ndomo serve` (serve.py)."""

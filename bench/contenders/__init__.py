"""One module per contender; each exposes ``run(workspace, sizes, ...) -> Outcome``."""

"""The typer layer: one thin module per subcommand (options -> config -> one library call)."""

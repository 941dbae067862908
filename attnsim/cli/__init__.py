"""The `attnsim` command line (entry point :func:`attnsim.cli.main.main`): one module per subcommand."""

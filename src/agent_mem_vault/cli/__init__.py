"""The ``agent-mem-vault`` command line. Commands live in one module per face."""

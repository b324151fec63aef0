"""The package's version, in the lowest layer: the packaging reads it from here
(``pyproject.toml``), and any module can name it without importing the package's
public face (``agent_mem_vault/__init__.py``), which reaches every layer above."""

__version__ = "0.1.0"

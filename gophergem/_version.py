"""The version of gophergem; the single place it is written."""

__version__ = "0.1.0"

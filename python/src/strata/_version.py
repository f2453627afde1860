"""The package version. It must equal the repository's VERSION file (checked by tests/test_package.py)."""

__version__ = "0.1.0"

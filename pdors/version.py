"""The library's version: in every run's record (``code_version``) and the nightly report."""

__version__ = "0.1.0"

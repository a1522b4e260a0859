"""The ``memo-solver`` command line: parsing, the commands, and their words."""

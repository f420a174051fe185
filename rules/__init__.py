"""The devlint rules, one module per rule; installed as ``devlint.rules``."""

"""`devlint verify`: prove a rewrite by running the original and the fixed program on every
device there is, in child processes, and comparing what they produce (see command.py)."""

# attack: busy loop — burn CPU forever to starve other runs.
# expect: timeout — the wall deadline kills the run (RLIMIT_CPU backs it up).
while True:
    pass

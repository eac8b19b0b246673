# attack: memory bomb — touch memory until the machine swaps or the host OOM killer strikes.
# expect: memory_limit — the run's memory cgroup OOM-kills the rank at its cap; the host is
# untouched.
chunks = []
while True:
    chunks.append(b"x" * (64 * 1024 * 1024))

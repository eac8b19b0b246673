"""RankLab executor: runs snippets across real torch ranks, sandboxed, from a warm pool.

Importing this package (and `executor.contract`, `executor.limits`) never imports torch:
the web app uses the contract models to talk to the service.
"""

EXECUTOR_VERSION = "0.2.0"  # bumped whenever runs can observe something new

# attack: leave files on the host — write to /tmp, /var/tmp, /dev/shm and the repository.
# expect: ok — the snippet catches failures; /tmp and /dev/shm are private tmpfs mounts that
# vanish with the run, everything else is read-only, so nothing appears on the host.
for path in ["/tmp/__LEFTOVER__", "/dev/shm/__LEFTOVER__", "/var/tmp/__LEFTOVER__",
             "__REPO__/__LEFTOVER__"]:  # fmt: skip
    try:
        with open(path, "w") as handle:
            handle.write("left behind")
        print(path, "written")
    except OSError as error:
        print(path, "blocked:", type(error).__name__)

# attack: reach a service on the host's loopback (the test listens on 127.0.0.1:__HOST_PORT__).
# expect: error with ConnectionRefusedError — the run has its own network namespace; its
# loopback is not the host's, and no other interface exists.
import socket

socket.create_connection(("127.0.0.1", int("__HOST_PORT__")), timeout=2)
print("connected to the host!")

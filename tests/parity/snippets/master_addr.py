# torchrun --standalone sets MASTER_ADDR to the machine's fully qualified name, socket.getfqdn()
# (torch/distributed/elastic/rendezvous/api.py), and rank 0's store listens there. An executor
# run is a machine of its own (hostname "ranklab", loopback only), whose name is "localhost".
import os
import socket

print(
    "MASTER_ADDR is this machine's fully qualified name:",
    os.environ["MASTER_ADDR"] == socket.getfqdn(),
)

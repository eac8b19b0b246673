# A snippet that builds its own TCPStore on MASTER_ADDR:MASTER_PORT (rank 0 as master), then a
# process group on it. Under torchrun the agent already serves a store on that port and sets
# TORCHELASTIC_USE_AGENT_STORE=True: rank 0's bind fails and c10d ignores the failure, so every
# rank becomes a client of the agent's store, and the snippet works.
import datetime
import os

import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
store = dist.TCPStore(
    os.environ["MASTER_ADDR"],
    int(os.environ["MASTER_PORT"]),
    world,
    is_master=rank == 0,
    timeout=datetime.timedelta(seconds=20),
)
print(f"rank {rank}: own TCPStore created (is_master={rank == 0})", flush=True)
store.set(f"hello/{rank}", f"from rank {rank}")
peer = (rank + 1) % world
print(f"rank {rank}: peer says {store.get(f'hello/{peer}').decode()}", flush=True)
dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
tensor = torch.tensor([rank + 1.0])
dist.all_reduce(tensor)
print(f"rank {rank}: all_reduce over the own store's group: {tensor.item()}")
dist.destroy_process_group()

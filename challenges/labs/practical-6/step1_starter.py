# practical6_ddp.py
import os

import torch.distributed as dist

dist.init_process_group("gloo")  # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
local_rank = int(os.environ["LOCAL_RANK"])

print("practical6_ddp.py is running")
# Your turn: print this process's rank, its local rank and the world size

dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()

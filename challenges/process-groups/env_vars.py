import os

import torch.distributed as dist

dist.init_process_group("gloo")  # env:// rendezvous: reads what torchrun set
env = {name: os.environ[name] for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
print(f"env {env['RANK']} {env['LOCAL_RANK']} {env['WORLD_SIZE']}")
print(f"api {dist.get_rank()} {dist.get_world_size()}")
dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()

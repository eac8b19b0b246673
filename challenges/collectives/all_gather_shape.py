import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
mine = torch.arange(rank + 1, dtype=torch.float32)  # rank 0: 1 value, rank 1: 2 values
gathered = [torch.zeros_like(mine) for _ in range(dist.get_world_size())]
dist.all_gather(gathered, mine)
print(f"rank {rank}: {gathered}")
dist.destroy_process_group()

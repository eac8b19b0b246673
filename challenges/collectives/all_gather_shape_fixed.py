import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
mine = torch.arange(rank + 1, dtype=torch.float32)  # rank 0: 1 value, rank 1: 2 values
padded = torch.zeros(world)                         # same shape on every rank
padded[: mine.numel()] = mine
gathered = [torch.zeros(world) for _ in range(world)]
dist.all_gather(gathered, padded)
print(f"rank {rank}: {[g[: r + 1] for r, g in enumerate(gathered)]}")
dist.destroy_process_group()

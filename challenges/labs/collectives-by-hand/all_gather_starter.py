import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

t = torch.tensor([rank])
gathered = [torch.zeros(1, dtype=t.dtype) for _ in range(world)]
# Your turn: fill `gathered` with every rank's t
print(f"rank {rank}: gathered = {[g.item() for g in gathered]}")

dist.destroy_process_group()

import torch
import torch.distributed as dist

# torchrun starts this same script once per rank; each copy learns who it is from the group.
dist.init_process_group("gloo")
rank = dist.get_rank()
world = dist.get_world_size()
t = torch.ones(2) * rank
print(f"rank {rank} of {world}: {t.tolist()}")
dist.destroy_process_group()

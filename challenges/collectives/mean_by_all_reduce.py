import torch
import torch.distributed as dist

VALUES = [1.0, 2.0, 3.0, 6.0]  # rank r holds VALUES[r]

dist.init_process_group("gloo")
rank = dist.get_rank()
mine = torch.tensor([VALUES[rank]])
dist.all_reduce(mine, op=dist.ReduceOp.SUM)
print(f"mean {mine.item() / dist.get_world_size()}")
dist.destroy_process_group()

import torch
import torch.distributed as dist

MEMBERS = [0, 2]  # the subgroup's global ranks
START = 1  # rank r holds r + START

dist.init_process_group("gloo")
rank = dist.get_rank()
pair = dist.new_group(MEMBERS)  # every rank calls new_group, members or not

t = torch.tensor([float(rank + START)])
dist.all_reduce(t, group=pair)       # called on all three ranks
print(f"rank {rank}: group rank {dist.get_rank(pair)}, t = {t.item()}")
dist.destroy_process_group()

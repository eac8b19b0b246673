import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
pair = dist.new_group([1, 2])  # every rank calls new_group, members or not

t = torch.tensor([float((rank + 1) * 10)])  # 10., 20., 30.
dist.all_reduce(t, group=pair)              # called on all three ranks
print(f"rank {rank}: group rank {dist.get_rank(pair)}, t = {t.item()}")
dist.destroy_process_group()

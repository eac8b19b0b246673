import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
pair = dist.new_group([0, 2])         # every rank creates every group,
everyone = dist.new_group([0, 1, 2])  # in the same order
print(f"rank {rank}: groups created", flush=True)

t = torch.tensor([float(rank + 1)])
dist.all_reduce(t, group=everyone)
print(f"rank {rank}: t = {t.item()}")
dist.destroy_process_group()

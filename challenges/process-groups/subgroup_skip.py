import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
if rank in (0, 2):  # only the members create the pair
    pair = dist.new_group([0, 2])
everyone = dist.new_group([0, 1, 2])  # then all three create a group of everyone
print(f"rank {rank}: groups created", flush=True)

t = torch.tensor([float(rank + 1)])
dist.all_reduce(t, group=everyone)
print(f"rank {rank}: t = {t.item()}")
dist.destroy_process_group()

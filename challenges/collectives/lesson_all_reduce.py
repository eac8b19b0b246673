import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank + 1)])  # rank 0 holds 1., rank 1 holds 2., rank 2 holds 3.
returned = dist.all_reduce(t, op=dist.ReduceOp.SUM)
print(returned, t.item())
dist.destroy_process_group()

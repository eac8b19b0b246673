import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

t = torch.tensor([rank])
dist.all_reduce(t, op=dist.ReduceOp.SUM)
print(f"rank {rank}: sum of ranks = {t.item()}")

dist.destroy_process_group()

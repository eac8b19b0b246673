import torch
import torch.distributed as dist

START = 1  # rank r starts with r + START

dist.init_process_group("gloo")
rank = dist.get_rank()
total = torch.tensor([float(rank + START)])
largest = torch.tensor([float(rank + START)])
dist.all_reduce(total, op=dist.ReduceOp.SUM)
dist.all_reduce(largest, op=dist.ReduceOp.MAX)
print(f"sum {total.item()} max {largest.item()}")
dist.destroy_process_group()

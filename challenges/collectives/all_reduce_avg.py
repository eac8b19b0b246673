import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
grad = torch.tensor([float(rank + 1)])  # 1.0 on rank 0, 2.0 on rank 1
dist.all_reduce(grad, op=dist.ReduceOp.AVG)
print(f"average {grad.item()}")
dist.destroy_process_group()

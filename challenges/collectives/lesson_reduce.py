import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.tensor([float(rank + 4)])  # 4., 5., 6.
kept = t.clone()  # after reduce, t on a rank other than dst is scratch: keep a copy
dist.reduce(t, dst=2, op=dist.ReduceOp.SUM)
if rank == 2:
    print(f"rank {rank}: sum {t.item()}")
else:
    print(f"rank {rank}: kept {kept.item()}")
dist.destroy_process_group()

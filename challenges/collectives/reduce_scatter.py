import torch
import torch.distributed as dist

STEP = 10.0  # rank r's chunk i holds STEP * r + i

dist.init_process_group("gloo")
rank = dist.get_rank()
# one one-value chunk per rank: rank 0 holds [0.], [1.], …; rank 1 holds [STEP], [STEP + 1], …
chunks = [torch.tensor([STEP * rank + i]) for i in range(dist.get_world_size())]
out = torch.zeros(1)
dist.reduce_scatter(out, chunks, op=dist.ReduceOp.SUM)
print(f"rank {rank}: {out}")
dist.destroy_process_group()

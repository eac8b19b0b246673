import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
# rank 0 holds [0., 1.], rank 1 holds [10., 11.], as one chunk per rank
chunks = [torch.tensor([10.0 * rank + i]) for i in range(dist.get_world_size())]
out = torch.zeros(1)
dist.reduce_scatter(out, chunks, op=dist.ReduceOp.SUM)
print(f"rank {rank}: {out}")
dist.destroy_process_group()

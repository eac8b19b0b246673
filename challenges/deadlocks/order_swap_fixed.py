import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

a = torch.full((4,), float(rank + 1))
b = torch.full((4,), float(10 * (rank + 1)))
dist.all_reduce(a)        # same calls, same order, on every rank
dist.broadcast(b, src=0)
print(f"rank {rank}: a={a.tolist()} b={b.tolist()}", flush=True)
dist.destroy_process_group()

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

loss = torch.tensor([float(rank + 1)])      # rank 0: 1.0, rank 1: 2.0
count = torch.tensor([100.0 * (rank + 1)])  # rank 0: 100.0, rank 1: 200.0
if rank == 0:
    dist.all_reduce(loss)  # only rank 0 logs the global loss
    print(f"rank 0: loss={loss.item()}", flush=True)
dist.all_reduce(count)
print(f"rank {rank}: count={count.item()}", flush=True)
dist.destroy_process_group()

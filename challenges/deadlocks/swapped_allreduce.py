import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

loss_sum = torch.tensor([1.0 + rank])            # rank 0: 1, rank 1: 2
sample_count = torch.tensor([100.0 * (rank + 1)])  # rank 0: 100, rank 1: 200
if rank == 0:
    dist.all_reduce(loss_sum)
    dist.all_reduce(sample_count)
else:
    dist.all_reduce(sample_count)
    dist.all_reduce(loss_sum)
print(f"rank {rank}: loss_sum={loss_sum.item()} sample_count={sample_count.item()}")
dist.destroy_process_group()

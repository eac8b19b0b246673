import torch
import torch.distributed as dist

LOSS = 1.0  # rank 0's loss sum; rank 1's is one more
COUNT = 100.0  # rank 0's sample count; rank 1's is twice as many

dist.init_process_group("gloo")
rank = dist.get_rank()

loss_sum = torch.tensor([LOSS + rank])
sample_count = torch.tensor([COUNT * (rank + 1)])
if rank == 0:
    dist.all_reduce(loss_sum)
    dist.all_reduce(sample_count)
else:
    dist.all_reduce(sample_count)
    dist.all_reduce(loss_sum)
print(f"rank {rank}: loss_sum={loss_sum.item()} sample_count={sample_count.item()}")
dist.destroy_process_group()

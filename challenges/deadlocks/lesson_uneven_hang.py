import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()

batches = 2 if rank == 0 else 3  # rank 1's shard holds one batch more
for step in range(batches):
    grad = torch.ones(1)
    dist.all_reduce(grad)
    print(f"rank {rank}: step {step} synced", flush=True)

dist.barrier()  # wait for everyone before saving
print(f"rank {rank}: saved", flush=True)
dist.destroy_process_group()

import torch.distributed as dist

rank = dist.get_rank()  # which rank am I?
print(f"rank {rank} starting", flush=True)
dist.init_process_group("gloo")
dist.barrier()
print(f"rank {rank} ready")
dist.destroy_process_group()

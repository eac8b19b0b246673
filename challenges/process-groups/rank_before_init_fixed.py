import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()  # the default group exists now
print(f"rank {rank} starting", flush=True)
dist.barrier()
print(f"rank {rank} ready")
dist.destroy_process_group()

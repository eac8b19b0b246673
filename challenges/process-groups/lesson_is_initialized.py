import torch.distributed as dist

print("not yet:", dist.is_initialized())
dist.init_process_group("gloo")
print("after init:", dist.is_initialized())
dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()
print("after destroy:", dist.is_initialized())

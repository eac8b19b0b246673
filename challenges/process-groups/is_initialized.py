import torch.distributed as dist

print("before:", dist.is_initialized())
dist.init_process_group("gloo")
print("during:", dist.is_initialized())
dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()
print("after:", dist.is_initialized())

# A real deadlock: rank 0 waits in all_reduce while rank 1 waits to receive from rank 0. Neither
# call can complete, gloo's default timeout is 30 minutes, so both ranks hang until killed.
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} before the mismatched calls", flush=True)
tensor = torch.zeros(1)
if rank == 0:
    dist.all_reduce(tensor)
else:
    dist.recv(tensor, src=0)
print("never printed")

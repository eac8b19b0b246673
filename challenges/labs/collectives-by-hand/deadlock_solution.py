import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()

loss = torch.tensor([float(rank + 1)])  # this rank's loss
dist.all_reduce(loss)  # a collective: every rank must call it
if rank == 0:  # only rank 0 logs
    print(f"mean loss {loss.item() / world}", flush=True)

dist.barrier()  # wait for every rank before finishing
print(f"rank {rank} finished", flush=True)
dist.destroy_process_group()

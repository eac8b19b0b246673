# all_gather into a list, into one tensor (all_gather_into_tensor, with its 2.13 deprecation
# warning on stderr), all_gather_object, and what uneven tensor sizes do on gloo.
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
parts = [torch.zeros(2) for _ in range(world)]
dist.all_gather(parts, torch.tensor([rank, rank * 10.0]))
print("all_gather:", [p.tolist() for p in parts])
flat = torch.zeros(world * 2)
dist.all_gather_into_tensor(flat, torch.tensor([rank, rank * 10.0]))
print("all_gather_into_tensor:", flat.tolist())
objects: list = [None] * world
dist.all_gather_object(objects, {"rank": rank, "name": f"r{rank}"})
print("all_gather_object:", objects)
uneven = [torch.zeros(i + 1) for i in range(world)]
try:
    dist.all_gather(uneven, torch.full((rank + 1,), float(rank)))
    print("uneven all_gather:", [u.tolist() for u in uneven])
except RuntimeError as error:
    print("uneven all_gather raises RuntimeError:", str(error).splitlines()[0])
dist.destroy_process_group()

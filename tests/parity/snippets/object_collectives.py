# broadcast_object_list from src=1 (placeholders on the other ranks are replaced in place),
# scatter_object_list and gather_object: picklable objects through gloo.
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
objects = [{"lr": 0.1, "steps": [1, 2]}, ("tuple", rank), None] if rank == 1 else [None, None, rank]
dist.broadcast_object_list(objects, src=1)
print("broadcast_object_list(src=1):", objects)
received: list = [None]
dist.scatter_object_list(
    received, [f"shard {i}" for i in range(world)] if rank == 0 else None, src=0
)
print("scatter_object_list:", received)
gathered = [None] * world if rank == 0 else None
dist.gather_object({"from": rank}, gathered, dst=0)
print("gather_object on this rank:", gathered)
dist.destroy_process_group()

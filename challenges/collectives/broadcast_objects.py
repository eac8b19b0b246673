import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
objects = [{"lr": 0.1, "epochs": 3}, "resnet18"] if rank == 0 else [None, None]
dist.broadcast_object_list(objects, src=0)
print(f"rank {rank}: {objects}")
dist.destroy_process_group()

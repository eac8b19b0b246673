import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
# rank 0 sends [0.] to rank 0 and [1.] to rank 1; rank 1 sends [10.] and [11.]
outgoing = [torch.tensor([10.0 * rank + i]) for i in range(dist.get_world_size())]
incoming = [torch.zeros(1) for _ in range(dist.get_world_size())]
dist.all_to_all(incoming, outgoing)
print(f"rank {rank}: {incoming}")
dist.destroy_process_group()

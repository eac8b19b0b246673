import torch
import torch.distributed as dist

STEP = 10.0  # rank r sends STEP * r + j to rank j

dist.init_process_group("gloo")
rank = dist.get_rank()
# outgoing[j] goes to rank j: rank 0 sends [0.], [1.], …; rank 1 sends [STEP], [STEP + 1], …
outgoing = [torch.tensor([STEP * rank + i]) for i in range(dist.get_world_size())]
incoming = [torch.zeros(1) for _ in range(dist.get_world_size())]
dist.all_to_all(incoming, outgoing)
print(f"rank {rank}: {incoming}")
dist.destroy_process_group()

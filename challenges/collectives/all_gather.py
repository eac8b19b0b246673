import torch
import torch.distributed as dist

SCALE = 10  # rank r holds [r, r * SCALE]

dist.init_process_group("gloo")
rank = dist.get_rank()
mine = torch.tensor([rank, rank * SCALE])
gathered = [torch.zeros(2, dtype=torch.int64) for _ in range(dist.get_world_size())]
dist.all_gather(gathered, mine)
print(torch.stack(gathered).tolist())
dist.destroy_process_group()

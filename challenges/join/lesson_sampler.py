import torch.distributed as dist
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()

dataset = list(range(7))  # 7 samples, 3 ranks; rank and world size come from the group
padded = DistributedSampler(dataset, shuffle=False)
dropped = DistributedSampler(dataset, shuffle=False, drop_last=True)
print(f"rank {rank}: {list(padded)}", flush=True)
print(f"rank {rank}, drop_last=True: {list(dropped)}", flush=True)
dist.destroy_process_group()

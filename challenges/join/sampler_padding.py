import torch.distributed as dist
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
dataset = list(range(5))  # 5 samples, 2 ranks

padded = DistributedSampler(dataset, shuffle=False)
dropped = DistributedSampler(dataset, shuffle=False, drop_last=True)
print(f"rank {rank}: default {list(padded)}, drop_last {list(dropped)}")
dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()

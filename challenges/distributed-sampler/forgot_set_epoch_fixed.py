import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(0)  # the DataLoader draws a base seed from the global generator
dataset = list(range(8))
sampler = DistributedSampler(dataset, shuffle=True)
loader = DataLoader(dataset, batch_size=4, sampler=sampler)

orders = []
for epoch in range(3):
    sampler.set_epoch(epoch)  # reseeds the shuffle: seed + epoch
    order = [int(i) for batch in loader for i in batch]
    print(f"rank {dist.get_rank()} epoch {epoch}: {order}", flush=True)
    orders.append(order)

# Shuffling is on, so each epoch should visit the shard in a new order.
assert orders[0] != orders[1] != orders[2], "every epoch repeated the same order"
dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()

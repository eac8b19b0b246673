# all_to_all and all_to_all_single with three gloo ranks: rank j's i-th chunk goes to rank i,
# with equal and with uneven split sizes.
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
outs = [torch.zeros(1) for _ in range(world)]
dist.all_to_all(outs, [torch.tensor([10.0 * rank + i]) for i in range(world)])
print("all_to_all:", [o.item() for o in outs])
out = torch.zeros(world)
dist.all_to_all_single(out, torch.tensor([10.0 * rank + i for i in range(world)]))
print("all_to_all_single:", out.tolist())
# Rank r sends i + 1 elements to rank i, so rank i receives i + 1 from each peer.
send = torch.arange(sum(range(1, world + 1)), dtype=torch.float32) + 100 * rank
receive = torch.zeros(world * (rank + 1))
dist.all_to_all_single(
    receive,
    send,
    output_split_sizes=[rank + 1] * world,
    input_split_sizes=list(range(1, world + 1)),
)
print("all_to_all_single uneven:", receive.tolist())
dist.destroy_process_group()

# reduce_scatter and reduce_scatter_tensor on gloo: rank i gets the sum over ranks of every
# rank's i-th chunk.
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
out = torch.zeros(2)
dist.reduce_scatter(out, [torch.tensor([10.0 * rank + i, 1.0]) for i in range(world)])
print("reduce_scatter:", out.tolist())
out = torch.zeros(1)
dist.reduce_scatter_tensor(out, torch.tensor([10.0 * rank + i for i in range(world)]))
print("reduce_scatter_tensor:", out.tolist())
out = torch.zeros(1)
dist.reduce_scatter_tensor(
    out, torch.tensor([10.0 * rank + i for i in range(world)]), op=dist.ReduceOp.MAX
)
print("reduce_scatter_tensor MAX:", out.tolist())
dist.destroy_process_group()

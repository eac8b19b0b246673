# reduce to dst=0 with three ranks: only the destination is promised the result; what a
# non-destination rank's tensor holds afterwards is whatever gloo's algorithm left there.
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
tensor = torch.tensor([rank + 1.0, 10.0 * (rank + 1)])
dist.reduce(tensor, dst=0)
print("after reduce(SUM, dst=0):", tensor.tolist())
tensor = torch.tensor([rank + 1.0])
dist.reduce(tensor, dst=2, op=dist.ReduceOp.MAX)
print("after reduce(MAX, dst=2):", tensor.tolist())
dist.destroy_process_group()

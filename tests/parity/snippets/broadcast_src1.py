# broadcast from a source other than rank 0: every rank ends with rank 1's tensor, whatever it
# held before; async_op=True returns a Work to wait on.
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
tensor = torch.arange(3, dtype=torch.float32) + 10 * rank
print("before:", tensor.tolist())
dist.broadcast(tensor, src=1)
print("after broadcast(src=1):", tensor.tolist())
ints = torch.tensor([rank, rank])
work = dist.broadcast(ints, src=1, async_op=True)
work.wait()
print("async broadcast of ints:", ints.tolist(), "completed:", work.is_completed())
dist.destroy_process_group()

import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()


def make_model():
    torch.manual_seed(0)
    model = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -1.0]]))  # the same weights on every rank
    return model


x, y = torch.tensor([[1.0 + rank, 2.0]]), torch.tensor([[1.0]])  # this rank's sample

local = make_model()
nn.functional.mse_loss(local(x), y).backward()
grad = local.weight.grad
print(f"rank {rank} local grad {grad.tolist()[0]}")
mean = grad.clone()
# Your turn: make `mean` the average of `grad` over all ranks
print(f"rank {rank} mean of local grads {mean.tolist()[0]}")

dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()

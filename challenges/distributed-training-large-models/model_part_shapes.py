import torch
import torch.nn as nn
import torch.distributed as dist

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
torch.manual_seed(0)

# The full model: nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 4)).
# Each rank builds only its own stage.
IN = 8
HIDDEN = 6
if rank == 0:
    stage = nn.Sequential(nn.Linear(IN, HIDDEN), nn.ReLU())
else:
    stage = nn.Linear(HIDDEN, 4)
held = sum(p.numel() for p in stage.parameters())

if rank == 0:
    x = torch.randn(3, IN)                   # a batch of 3 samples
    h = stage(x)
    dist.send(h.detach(), dst=1)             # activations forward to rank 1
    grad_h = torch.empty_like(h)
    dist.recv(grad_h, src=1)                 # their gradient comes back
    h.backward(grad_h)
    print(f"rank 0: {held} parameters, sent {tuple(h.shape)}, "
          f"got gradient {tuple(grad_h.shape)}", flush=True)
else:
    h = torch.empty(3, HIDDEN)               # rank 1 must know the shape in advance
    dist.recv(h, src=0)
    h.requires_grad_()
    out = stage(h)
    out.sum().backward()
    dist.send(h.grad, dst=0)                 # gradient w.r.t. the activations goes back
    print(f"rank 1: {held} parameters, received {tuple(h.shape)}, "
          f"output {tuple(out.shape)}", flush=True)

dist.destroy_process_group()

# Which warnings a fresh rank shows on stderr: the default filters show a UserWarning once per
# location, a DeprecationWarning raised in __main__, and torch's FutureWarning for the deprecated
# all_gather_into_tensor (once). The filters themselves are printed too.
import warnings

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
print("warning filters:", len(warnings.filters))
for action, message, category, module, lineno in warnings.filters:
    pattern = getattr(message, "pattern", message)
    print(
        "filter:",
        action,
        repr(pattern),
        category.__name__,
        getattr(module, "pattern", module),
        lineno,
    )
for _ in range(3):
    warnings.warn("shown once per location", UserWarning, stacklevel=1)
warnings.warn("deprecated in __main__", DeprecationWarning, stacklevel=1)
for _ in range(2):
    dist.all_gather_into_tensor(torch.zeros(dist.get_world_size()), torch.ones(1))
print("done")
dist.destroy_process_group()

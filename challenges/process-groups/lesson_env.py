import os

# torchrun sets these variables in every process it starts; nothing is initialised yet.
print(os.environ["RANK"], os.environ["LOCAL_RANK"], os.environ["WORLD_SIZE"])

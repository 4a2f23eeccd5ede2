"""ch01.protocols: the six rows of the series' table, each executed. The pure-Python half of each row always
runs; the PyTorch half runs where this interpreter imports torch, and is skipped with the reason otherwise."""
import contextlib
import dataclasses
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from pydriver import emit, fault, measurement  # noqa: E402

planted = fault()
rows = {}


# 1. __getitem__ / __len__ = the sequence protocol (Dataset)
class Squares:
    def __len__(self):
        return 5

    def __getitem__(self, i):
        if i >= len(self):
            raise IndexError(i)
        return i * i


rows["__getitem__/__len__"] = len(Squares()) == 5 and list(Squares()) == [0, 1, 4, 9, 16]

# 2. yield = lazy: nothing runs before it is asked for
produced = []


def lazy():
    for i in range(10**9):
        produced.append(i)
        yield i


g = lazy()
untouched = produced == []
first3 = [next(g) for _ in range(3)]
rows["yield"] = untouched and first3 == [0, 1, 2] and len(produced) == 3


# 3. __call__ runs hooks, then forward
class Module:
    def __init__(self):
        self.hooks, self.log = [], []

    def __call__(self, x):
        if planted != "no_hooks":
            for h in self.hooks:
                h(self, x)
        return self.forward(x)

    def forward(self, x):
        self.log.append("forward")
        return x + 1


m = Module()
m.hooks.append(lambda mod, x: mod.log.append("hook"))
rows["__call__"] = m(1) == 2 and m.log == ["hook", "forward"]


# 4. one object, decorator and context manager
class no_grad(contextlib.ContextDecorator):
    enabled = True

    def __enter__(self):
        self.prev, no_grad.enabled = no_grad.enabled, False

    def __exit__(self, *exc):
        no_grad.enabled = self.prev
        return False


@no_grad()
def evaluate():
    return no_grad.enabled


with no_grad():
    inside = no_grad.enabled
rows["@no_grad"] = evaluate() is False and inside is False and no_grad.enabled is True


# 5. **kwargs pass-through: model(**batch)
def forward(input_ids, attention_mask=None, labels=None):
    return (input_ids, attention_mask, labels)


batch = {"input_ids": [1, 2], "attention_mask": [1, 1], "labels": [2, 3]}
rows["**kwargs"] = forward(**batch) == ([1, 2], [1, 1], [2, 3])


# 6. @dataclass -> asdict -> config.json -> back
@dataclasses.dataclass
class TrainConfig:
    lr: float = 3e-4
    batch_size: int = 32
    seed: int = 1234


cfg = TrainConfig(lr=1e-3)
rows["@dataclass"] = TrainConfig(**json.loads(json.dumps(dataclasses.asdict(cfg)))) == cfg

# The PyTorch half, where torch is importable.
torch_rows = {}
try:
    import torch
    from torch.utils.data import DataLoader, Dataset

    class T(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return torch.tensor([i])

    torch_rows["Dataset/DataLoader"] = [b.tolist() for b in DataLoader(T(), batch_size=2)] == [[[0], [1]], [[2], [3]]]
    lin, order = torch.nn.Linear(2, 2), []
    lin.register_forward_pre_hook(lambda mod, args: order.append("hook"))
    lin.register_forward_hook(lambda mod, args, out: order.append("after forward"))
    lin(torch.ones(1, 2))
    torch_rows["nn.Module.__call__"] = order == ["hook", "after forward"]
    x = torch.ones(1, requires_grad=True)

    @torch.no_grad()
    def f(t):
        return (t * 2).requires_grad

    with torch.no_grad():
        y = (x * 2).requires_grad
    torch_rows["torch.no_grad"] = f(x) is False and y is False
    torch_note = f"torch {torch.__version__}"
except ImportError as e:
    torch_note = f"skipped: torch is not importable by {sys.executable} ({e})"

emit(measurements=[measurement("value", sum(bool(v) for v in rows.values()), "count")],
     details={"rows": rows, "torch_rows": torch_rows, "torch": torch_note, "planted_fault": planted or None},
     assumptions=["each row is executed in plain Python; the PyTorch counterparts run where torch imports"])

#!/usr/bin/python3
"""PyTorch peer of the Fashion-MNIST examples (examples/fmnist_{fnn,cnn,lstm,rnn}_adam.json).

The same four networks as the specs, trained the way a PyTorch user would:
  fnn   784-512-10, ReLU (nn.Linear)
  cnn   conv 32 3x3 pad 1 relu, conv 32 3x3 pad 1 relu, max_pool 2, conv 64 3x3 pad 1 relu,
        conv 64 3x3 pad 1 relu, max_pool 2, flatten (3136), dense 256 relu, dense 10
  lstm  nn.LSTM(28, 128, num_layers=2, batch_first=True) over the 28 image rows, then
        nn.Linear(128, 10) on the top layer's output at the last step
  rnn   the same with nn.RNN(..., nonlinearity='tanh')
PyTorch's default initialization (the specs' `"init": "torch"`), or with `--init orthogonal` the
specs' `"init": "orthogonal"` (Glorot-normal weights, each recurrent gate's weight_hh block a
random orthogonal matrix, zero biases), CrossEntropyLoss (mean over the
minibatch), Adam lr 1e-3, batch 128, the training rows reshuffled every epoch by a seeded
torch.Generator, pixels / 255, then with `--normalization zscore` (the fnn, lstm and rnn specs'
NORMALIZATION_ZSCORE) each pixel standardized by the mean and population standard deviation of that
pixel over the training images (1 where it is constant), as sparrow does; `none` (the cnn spec's
NORMALIZATION_NONE) keeps pixels / 255.

Data: the four IDX .gz files of ../shared/data/fashion_mnist (`--data DIR`), read here with gzip +
numpy; train = the 60000 training images, test = the 10000 t10k images. When they are absent it
prints "fmnist_torch: skipped: data absent (...)" and exits 0.

Output: one JSON line per model and epoch on stdout:
  {"model", "dtype", "epoch", "seconds", "train_loss", "test_accuracy", ...}
`seconds` is the wall time of the epoch's training loop only (shuffle, forward, backward, Adam
steps); the test evaluation after it is not included. `train_loss` is the mean minibatch loss of
the epoch, `test_accuracy` a percentage on the test images.

Usage: /usr/bin/python3 bench/fmnist_torch.py [--models fnn,cnn,lstm,rnn] [--epochs 5]
         [--dtype float32|float64] [--threads 2] [--seed 1] [--data DIR] [--limit N]
         [--blas-dir DIR] [--normalization none|zscore] [--init torch|orthogonal]
`--limit N` keeps the first N training and the first N test images (smoke runs).

BLAS and threads. Debian's python3-torch 1.13 is built with BLAS_INFO=generic: its matrix
products go through whatever libblas.so.3 the system alternative points to, which is netlib's
reference BLAS unless an optimized one is installed (`apt install libopenblas0-pthread`). With the
reference BLAS a 512 x 512 GEMM runs at ~1.5 GFLOP/s and the LSTM takes ~3.5 s per minibatch, so
the peer would be measuring netlib. `--blas-dir DIR` re-executes this script with DIR first on
LD_LIBRARY_PATH (e.g. the openblas-pthread directory of an extracted libopenblas0-pthread .deb);
every JSON line names the libblas actually loaded ("blas"). Before torch is imported the script
sets OPENBLAS_NUM_THREADS / OMP_NUM_THREADS to --threads and OMP_WAIT_POLICY=passive unless they
are already set: on a loaded 2-core VM libgomp's default spin-waiting made a 2-thread LSTM
minibatch 20-40x slower than with passive waiting.
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np

FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
MODELS = ("fnn", "cnn", "lstm", "rnn")
DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                            "data", "fashion_mnist")


def read_idx(path):
    """An IDX file (gzip'd or not) as a numpy array of its dimensions."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path}: not an IDX file")
    if raw[2] != 0x08:
        raise ValueError(f"{path}: element type 0x{raw[2]:02x}, expected unsigned byte (0x08)")
    ndim = raw[3]
    dims = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes of data, header says {dims}")
    return data.reshape(dims)


def load(data_dir):
    arrays = {k: read_idx(os.path.join(data_dir, v)) for k, v in FILES.items()}
    for split in ("train", "test"):
        if arrays[f"{split}_images"].shape[0] != arrays[f"{split}_labels"].shape[0]:
            raise ValueError(f"{split}: image and label counts differ")
    return arrays


def zscore(train, test):
    """Each pixel (column) minus its training mean, over its training population standard
    deviation (1 for a constant pixel): sparrow's NORMALIZATION_ZSCORE."""
    mean = train.mean(axis=0)
    std = train.std(axis=0)
    std[std == 0] = 1.0
    return (train - mean) / std, (test - mean) / std


def build(name, torch):
    nn = torch.nn
    if name == "fnn":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 10))
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),  # 64 x 7 x 7 = 3136, channel-major
            nn.Linear(3136, 256), nn.ReLU(),
            nn.Linear(256, 10))

    class Recurrent(nn.Module):
        """Rows of the image as 28 steps of 28 features; the top layer's output at the last step
        through a linear layer (sequence-to-label)."""

        def __init__(self, cell):
            super().__init__()
            if cell == "lstm":
                self.rnn = nn.LSTM(28, 128, num_layers=2, batch_first=True)
            else:
                self.rnn = nn.RNN(28, 128, num_layers=2, nonlinearity="tanh", batch_first=True)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            h, _ = self.rnn(x.reshape(x.shape[0], 28, 28))
            return self.out(h[:, -1, :])

    if name in ("lstm", "rnn"):
        return Recurrent(name)
    raise ValueError(f"unknown model {name!r}")


def orthogonal_init(model, torch):
    """Sparrow's "init": "orthogonal": Glorot-normal weights (a recurrent layer's weight_ih per
    H x F gate block, as Sparrow draws it), zero biases, and each H x H gate block of weight_hh
    an independent random orthogonal matrix."""
    nn = torch.nn
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "bias" in name:
                nn.init.zeros_(p)
            elif "weight_hh" in name:
                h = p.shape[1]
                for g in range(p.shape[0] // h):
                    nn.init.orthogonal_(p[g * h:(g + 1) * h])
            elif "weight_ih" in name:
                # Per gate block, so fan_out is H as in Sparrow, not 4H for an LSTM.
                h = model.rnn.hidden_size
                for g in range(p.shape[0] // h):
                    nn.init.xavier_normal_(p[g * h:(g + 1) * h])
            else:
                nn.init.xavier_normal_(p)


def test_accuracy(model, x, y, torch):
    """% of the images whose largest output is their label, in chunks of 1000."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, x.shape[0], 1000):
            pred = model(x[start:start + 1000]).argmax(dim=1)
            correct += int((pred == y[start:start + 1000]).sum())
    return 100.0 * correct / x.shape[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="directory of the four IDX .gz files")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: fnn,cnn,lstm,rnn")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--init", choices=("torch", "orthogonal"), default="torch",
                    help="the spec's model.init: PyTorch's defaults or orthogonal recurrent weights")
    ap.add_argument("--normalization", choices=("none", "zscore"), default="none",
                    help="zscore: standardize each pixel by its training mean and std")
    ap.add_argument("--limit", type=int, default=0,
                    help="use only the first N training and N test images (0 = all)")
    ap.add_argument("--blas-dir", default="",
                    help="directory holding the libblas.so.3 to use (re-executes with LD_LIBRARY_PATH)")
    a = ap.parse_args()

    if a.blas_dir and os.environ.get("FMNIST_TORCH_BLAS_DIR") != a.blas_dir:
        if not os.path.isfile(os.path.join(a.blas_dir, "libblas.so.3")):
            ap.error(f"--blas-dir: {a.blas_dir}/libblas.so.3 not found")
        env = dict(os.environ, FMNIST_TORCH_BLAS_DIR=a.blas_dir)
        env["LD_LIBRARY_PATH"] = a.blas_dir + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable] + sys.argv, env)

    models = [m.strip() for m in a.models.split(",") if m.strip()]
    bad = [m for m in models if m not in MODELS]
    if bad or not models:
        ap.error(f"--models: unknown {bad}; choose from {','.join(MODELS)}")
    if a.epochs < 1 or a.threads < 1 or a.batch < 1:
        ap.error("--epochs, --threads and --batch must be at least 1")

    missing = [f for f in FILES.values() if not os.path.isfile(os.path.join(a.data, f))]
    if missing:
        print(f"fmnist_torch: skipped: data absent ({a.data}: missing {', '.join(missing)})")
        return 0

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(a.threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import torch  # after the data check, so a machine without data needs no torch
    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)

    blas = "?"
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "libblas" in line.split()[-1]}
        blas = ",".join(sorted(libs)) or "none"  # the directory says which: blas/ = netlib
    except OSError:
        pass

    arr = load(a.data)
    n_train = arr["train_images"].shape[0] if a.limit <= 0 else min(a.limit, arr["train_images"].shape[0])
    n_test = arr["test_images"].shape[0] if a.limit <= 0 else min(a.limit, arr["test_images"].shape[0])
    train = arr["train_images"][:n_train].reshape(n_train, -1).astype(np.float64) / 255.0
    test = arr["test_images"][:n_test].reshape(n_test, -1).astype(np.float64) / 255.0
    if a.normalization == "zscore":
        train, test = zscore(train, test)
    x_train = torch.from_numpy(train).to(dtype)
    x_train = x_train.reshape(n_train, 1, 28, 28)
    y_train = torch.from_numpy(arr["train_labels"][:n_train].astype(np.int64))
    x_test = torch.from_numpy(test).to(dtype)
    x_test = x_test.reshape(n_test, 1, 28, 28)
    y_test = torch.from_numpy(arr["test_labels"][:n_test].astype(np.int64))

    for name in models:
        torch.manual_seed(a.seed)  # the initialization
        model = build(name, torch).to(dtype)
        if a.init == "orthogonal":
            orthogonal_init(model, torch)
        opt = torch.optim.Adam(model.parameters(), lr=a.lr)
        loss_fn = torch.nn.CrossEntropyLoss()
        gen = torch.Generator().manual_seed(a.seed)  # the minibatch order
        params = sum(p.numel() for p in model.parameters())
        for epoch in range(1, a.epochs + 1):
            model.train()
            t0 = time.perf_counter()
            perm = torch.randperm(n_train, generator=gen)
            total, batches = 0.0, 0
            for start in range(0, n_train, a.batch):
                idx = perm[start:start + a.batch]
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x_train[idx]), y_train[idx])
                loss.backward()
                opt.step()
                total += loss.item()
                batches += 1
            seconds = time.perf_counter() - t0
            print(json.dumps({
                "model": name, "dtype": a.dtype, "epoch": epoch, "seconds": round(seconds, 4),
                "train_loss": total / batches,
                "test_accuracy": test_accuracy(model, x_test, y_test, torch),
                "seed": a.seed, "threads": a.threads, "train_images": n_train,
                "test_images": n_test, "parameters": params, "torch": torch.__version__, "blas": blas,
                "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}),
                flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

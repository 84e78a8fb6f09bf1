#!/usr/bin/python3
"""PyTorch peer of sparrow's RLS optimizer (Zhang et al.; ALGORITHMS.md §3) on Fashion-MNIST.

The step of core/optim/rls, written the way a PyTorch user would: forward hooks keep each
preconditioned layer's mean input row, loss.backward() gives the gradient at Theta_{s-1},
clip_grad_norm_ clips it, then every block B = [W b] of an nn.Linear, nn.Conv2d (im2col rows by
F.unfold) or nn.LSTM layer (W = [weight_ih bias_ih], V = [weight_hh bias_hh], k scaled by T) takes

    u = P x̄,  h = λ + k x̄ᵀu,  Ω = α Ω - (η / h) G P,  P = (P - (k / h) u uᵀ) / λ,
    B = B + Ω - γ sgn(B_old) P

and, in the hybrid mode (hrls), the output layer takes a torch.optim.Adam step. P is float64 (as
sparrow's), the network runs in --dtype. Networks, data, normalization, initialization and
minibatch order are those of bench/fmnist_torch.py (the 2-layer LSTM is two single-layer nn.LSTM so
hooks see the second layer's input; the same parameters and law).

Output: one JSON line per model and epoch: {"model", "variant", "epoch", "seconds",
"train_loss", "test_accuracy", ...}; `seconds` is the training loop only.

Usage: /usr/bin/python3 bench/rls_torch.py [--models fnn,cnn,lstm] [--variant hrls] [--epochs 1]
         [--dtype float32|float64] [--threads 2] [--seed 1] [--limit N] [--data DIR]
         [--normalization none|zscore] [--blas-dir DIR]
Variants as examples/fmnist_<model>_<variant>.json: rls (the all-RLS mode: every layer RLS, linear
outputs, (1/2M) Σ‖z − onehot‖²), rls_m (+M, α 0.5), rls_mr (+M+R, γ 1e-5, 1e-6 for the LSTM), hrls
(softmax cross-entropy, Adam lr 1e-3 on the output layer); k 0.1, η 1, λ 1, clip 5 (1 for the
LSTM). Exit 0; "skipped" when the data are absent.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fmnist_torch  # noqa: E402  (load, zscore, build, test_accuracy, FILES)

VARIANTS = {
    "rls": dict(momentum=0.0, l1=0.0, hybrid=False),
    "rls_m": dict(momentum=0.5, l1=0.0, hybrid=False),
    "rls_mr": dict(momentum=0.5, l1=None, hybrid=False),  # None: the model's gamma
    "hrls": dict(momentum=0.0, l1=0.0, hybrid=True),
}


class Block:
    """One [W b] matrix: its parameters, P (float64), momentum, and x̄ from the last forward."""

    def __init__(self, torch, weight, bias, steps):
        self.torch, self.weight, self.bias, self.steps = torch, weight, bias, steps
        cols = weight[0].numel() + 1
        self.p = torch.eye(cols, dtype=torch.float64)
        self.omega = torch.zeros(weight.shape[0], cols, dtype=torch.float64)
        self.xbar = None

    def matrix(self, grad=False):
        w, b = (self.weight.grad, self.bias.grad) if grad else (self.weight, self.bias)
        return self.torch.cat([w.reshape(w.shape[0], -1), b[:, None]], 1).to(self.torch.float64)

    def step(self, k, eta, lam, alpha, gamma):
        torch = self.torch
        x = torch.cat([self.xbar.to(torch.float64), torch.ones(1, dtype=torch.float64)])
        k = k * self.steps
        u = self.p @ x
        h = lam + k * float(x @ u)
        g = self.matrix(grad=True)
        old = self.matrix()
        self.omega = alpha * self.omega - (eta / h) * (g @ self.p)
        self.p.addr_(u, u, alpha=-k / h)  # in place: P can be 3137² (79 MB)
        if lam != 1.0:
            self.p.div_(lam)
        new = old + self.omega
        if gamma > 0:
            sign = torch.sign(old)
            sign[:, -1] = 0  # the bias column is not penalized
            new -= gamma * (sign @ self.p)
        with torch.no_grad():
            n = self.weight[0].numel()
            self.weight.copy_(new[:, :n].reshape(self.weight.shape).to(self.weight.dtype))
            self.bias.copy_(new[:, n].to(self.bias.dtype))


def build(name, torch):
    """fmnist_torch's network, the LSTM as two single-layer nn.LSTM."""
    nn = torch.nn
    if name != "lstm":
        return fmnist_torch.build(name, torch)

    class Lstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = nn.LSTM(28, 128, batch_first=True)
            self.l2 = nn.LSTM(128, 128, batch_first=True)
            self.out = nn.Linear(128, 10)

        def forward(self, x):
            h1, _ = self.l1(x.reshape(x.shape[0], 28, 28))
            h2, _ = self.l2(h1)
            return self.out(h2[:, -1, :])

    return Lstm()


def attach(model, torch, hybrid):
    """The blocks RLS preconditions (with hooks filling their x̄) and the Adam parameters."""
    nn, F = torch.nn, torch.nn.functional
    layers = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d, nn.LSTM))]
    output = layers[-1]
    blocks, adam = [], []
    for m in layers:
        if hybrid and m is output:
            adam += list(m.parameters())
            continue
        if isinstance(m, nn.Linear):
            b = Block(torch, m.weight, m.bias, 1)
            m.register_forward_hook(lambda mod, inp, out, b=b: setattr(
                b, "xbar", inp[0].detach().reshape(-1, inp[0].shape[-1]).mean(0)))
            blocks.append(b)
        elif isinstance(m, nn.Conv2d):
            b = Block(torch, m.weight, m.bias, 1)
            # The mean im2col row: unfold is linear, so unfold the batch's mean image.
            m.register_forward_hook(lambda mod, inp, out, b=b: setattr(
                b, "xbar", F.unfold(inp[0].detach().mean(0, keepdim=True), mod.kernel_size,
                                    padding=mod.padding).mean((0, 2))))
            blocks.append(b)
        else:  # nn.LSTM, one layer: W over the inputs x_t, V over h_{t-1} (h_0 = 0)
            steps = 28
            w = Block(torch, m.weight_ih_l0, m.bias_ih_l0, steps)
            v = Block(torch, m.weight_hh_l0, m.bias_hh_l0, steps)

            def hook(mod, inp, out, w=w, v=v):
                x, h = inp[0].detach(), out[0].detach()
                w.xbar = x.reshape(-1, x.shape[-1]).mean(0)
                v.xbar = h[:, :-1, :].sum((0, 1)) / (h.shape[0] * h.shape[1])
            m.register_forward_hook(hook)
            blocks += [w, v]
    return blocks, adam


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=fmnist_torch.DEFAULT_DATA)
    ap.add_argument("--models", default="fnn,cnn,lstm")
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="hrls")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--normalization", choices=("none", "zscore", "spec"), default="spec",
                    help="spec (default): the example's (zscore for fnn and lstm, none for cnn)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--blas-dir", default="")
    a = ap.parse_args()

    if a.blas_dir and os.environ.get("FMNIST_TORCH_BLAS_DIR") != a.blas_dir:
        env = dict(os.environ, FMNIST_TORCH_BLAS_DIR=a.blas_dir)
        env["LD_LIBRARY_PATH"] = a.blas_dir + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    models = [m for m in a.models.split(",") if m]
    if not models or any(m not in ("fnn", "cnn", "lstm") for m in models):
        ap.error("--models: choose from fnn,cnn,lstm")
    missing = [f for f in fmnist_torch.FILES.values()
               if not os.path.isfile(os.path.join(a.data, f))]
    if missing:
        print(f"rls_torch: skipped: data absent ({a.data}: missing {', '.join(missing)})")
        return 0
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(a.threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import torch
    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)
    arr = fmnist_torch.load(a.data)
    n_train = arr["train_images"].shape[0] if a.limit <= 0 else min(a.limit, arr["train_images"].shape[0])
    n_test = arr["test_images"].shape[0] if a.limit <= 0 else min(a.limit, arr["test_images"].shape[0])
    raw_train = arr["train_images"][:n_train].reshape(n_train, -1).astype(np.float64) / 255.0
    raw_test = arr["test_images"][:n_test].reshape(n_test, -1).astype(np.float64) / 255.0
    y_train = torch.from_numpy(arr["train_labels"][:n_train].astype(np.int64))
    y_test = torch.from_numpy(arr["test_labels"][:n_test].astype(np.int64))
    variant = VARIANTS[a.variant]

    for name in models:
        norm = a.normalization if a.normalization != "spec" else (
            "none" if name == "cnn" else "zscore")
        train, test = (fmnist_torch.zscore(raw_train, raw_test) if norm == "zscore"
                       else (raw_train, raw_test))
        x_train = torch.from_numpy(train).to(dtype).reshape(n_train, 1, 28, 28)
        x_test = torch.from_numpy(test).to(dtype).reshape(n_test, 1, 28, 28)
        torch.manual_seed(a.seed)
        model = build(name, torch).to(dtype)
        blocks, adam_params = attach(model, torch, variant["hybrid"])
        adam = torch.optim.Adam(adam_params, lr=1e-3) if adam_params else None
        gamma = variant["l1"] if variant["l1"] is not None else (1e-6 if name == "lstm" else 1e-5)
        clip = 1.0 if name == "lstm" else 5.0
        if variant["hybrid"]:
            loss_fn = torch.nn.CrossEntropyLoss()
        else:  # the all-RLS mode: (1/2M) sum ||z - onehot||^2 on linear outputs
            def loss_fn(z, y):
                target = torch.nn.functional.one_hot(y, z.shape[1]).to(z.dtype)
                return 0.5 * (z - target).square().sum(1).mean()
        gen = torch.Generator().manual_seed(a.seed)
        for epoch in range(1, a.epochs + 1):
            model.train()
            t0 = time.perf_counter()
            perm = torch.randperm(n_train, generator=gen)
            total, batches = 0.0, 0
            for start in range(0, n_train, a.batch):
                idx = perm[start:start + a.batch]
                model.zero_grad(set_to_none=True)
                loss = loss_fn(model(x_train[idx]), y_train[idx])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                with torch.no_grad():
                    for b in blocks:
                        b.step(0.1, 1.0, 1.0, variant["momentum"], gamma)
                if adam is not None:
                    adam.step()
                total += loss.item()
                batches += 1
            seconds = time.perf_counter() - t0
            print(json.dumps({
                "model": name, "variant": a.variant, "dtype": a.dtype, "epoch": epoch,
                "seconds": round(seconds, 4), "train_loss": total / batches,
                "test_accuracy": fmnist_torch.test_accuracy(model, x_test, y_test, torch),
                "seed": a.seed, "threads": a.threads,
                "train_images": n_train, "torch": torch.__version__}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

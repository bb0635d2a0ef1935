"""Reading a ratings file into a CSR matrix, for the benchmarks that give
kfactor and a Python peer the same matrix (bench_implicit_torch.py,
bench_python.py)."""
import sys

import numpy as np
import scipy.io
import scipy.sparse as sp


def read_ratings(path):
    """The ratings as a canonical CSR (float64, ids mapped densely in
    ascending order, duplicates summed, zeros dropped)."""
    if path.endswith(".mtx"):
        A = scipy.io.mmread(path).tocoo()
        users, items, vals = A.row.astype(np.int64), A.col.astype(np.int64), A.data.astype(np.float64)
    else:
        with open(path) as f:
            first = next(line for line in f if line.strip() and not line.startswith(("#", "%")))
        sep = "," if "," in first else None
        try:
            float(first.split(sep)[0])
            header = 0
        except ValueError:
            header = 1
        T = np.loadtxt(path, delimiter=sep, comments=("#", "%"), skiprows=header, ndmin=2)
        users, items = T[:, 0].astype(np.int64), T[:, 1].astype(np.int64)
        vals = T[:, 2] if T.shape[1] > 2 else np.ones(len(T))
    if (vals < 0).any():
        sys.exit(f"{path}: {int((vals < 0).sum())} negative ratings; implicit feedback needs ratings >= 0")
    keep = vals > 0
    user_ids, rows = np.unique(users[keep], return_inverse=True)
    item_ids, cols = np.unique(items[keep], return_inverse=True)
    R = sp.coo_matrix((vals[keep], (rows, cols)), shape=(len(user_ids), len(item_ids))).tocsr()
    R.sum_duplicates()
    R.sort_indices()
    return R

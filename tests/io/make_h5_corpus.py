#!/usr/bin/env python3
"""Writes the HDF5 CSR files of tests/io/malformed/ (needs h5py and numpy).

File names: h5csr_OUTCOME_OBJECT_description.h5
  OUTCOME  err (must raise InputError / exit 3) or ok (well-formed, must read)
  OBJECT   for err files, what the message must name: shape (the attribute),
           indptr | indices | data | row_ids | col_ids (the dataset), or file
           (the file as a whole: not HDF5, truncated)
Each err file breaks one rule of a small valid file (io/hdf5_csr.hpp).
Run from anywhere; rewrites those files (commit the result).
"""
import os

import h5py
import numpy as np

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "malformed")

# A valid 4 x 5 matrix: row 2 empty, original ids.
SHAPE = (4, 5)
INDPTR = np.array([0, 2, 3, 3, 5], dtype=np.int64)
INDICES = np.array([0, 3, 4, 1, 2], dtype=np.int32)
DATA = np.array([1.5, -2.0, 3.25, 4.0, 0.5], dtype=np.float64)
ROW_IDS = np.array([3, 10, 11, 40], dtype=np.int64)
COL_IDS = np.array([1, 2, 5, 7, 9], dtype=np.int64)


def write(name, shape=SHAPE, indptr=INDPTR, indices=INDICES, data=DATA, row_ids=ROW_IDS, col_ids=COL_IDS,
          extra=None):
    path = os.path.join(HERE, name)
    with h5py.File(path, "w") as f:
        if shape is not None:
            f.attrs["shape"] = shape
        for key, value in (("indptr", indptr), ("indices", indices), ("data", data), ("row_ids", row_ids),
                           ("col_ids", col_ids)):
            if value is not None:
                f.create_dataset(key, data=value)
        if extra:
            extra(f)
    return path


def main():
    # Files named *_fuzz_* are inputs a fuzz target found, kept as they are.
    for old in os.listdir(HERE):
        if old.startswith("h5csr_") and "_fuzz_" not in old:
            os.remove(os.path.join(HERE, old))
    # ---- well-formed ------------------------------------------------------------
    write("h5csr_ok_small_with_ids.h5")
    write("h5csr_ok_int64_indices_float32_no_ids.h5", indices=INDICES.astype(np.int64),
          data=DATA.astype(np.float32), row_ids=None, col_ids=None)
    write("h5csr_ok_no_entries.h5", shape=(3, 2), indptr=np.zeros(4, np.int64), indices=np.zeros(0, np.int32),
          data=np.zeros(0), row_ids=None, col_ids=None)
    # ---- the shape attribute ----------------------------------------------------------
    write("h5csr_err_shape_missing.h5", shape=None)
    write("h5csr_err_shape_float.h5", shape=np.array([4.0, 5.0]))
    write("h5csr_err_shape_three_values.h5", shape=(4, 5, 1))
    write("h5csr_err_shape_negative_cols.h5", shape=(4, -5))
    write("h5csr_err_shape_rows_over_int32.h5", shape=(2 ** 31, 5))
    # ---- indptr -----------------------------------------------------------------------
    write("h5csr_err_indptr_missing.h5", indptr=None)
    write("h5csr_err_indptr_is_a_group.h5", indptr=None, extra=lambda f: f.create_group("indptr"))
    write("h5csr_err_indptr_float.h5", indptr=INDPTR.astype(np.float64))
    write("h5csr_err_indptr_two_dimensional.h5", indptr=INDPTR.reshape(1, 5))
    write("h5csr_err_indptr_wrong_length.h5", indptr=INDPTR[:4])
    write("h5csr_err_indptr_decreasing.h5", indptr=np.array([0, 2, 1, 3, 5], np.int64))
    write("h5csr_err_indptr_not_from_zero.h5", indptr=np.array([1, 2, 3, 3, 5], np.int64))
    write("h5csr_err_indptr_ends_before_nnz.h5", indptr=np.array([0, 2, 3, 3, 4], np.int64))
    # ---- indices ----------------------------------------------------------------------
    write("h5csr_err_indices_missing.h5", indices=None)
    write("h5csr_err_indices_float.h5", indices=INDICES.astype(np.float32))
    write("h5csr_err_indices_out_of_range.h5", indices=np.array([0, 3, 5, 1, 2], np.int32))
    write("h5csr_err_indices_negative.h5", indices=np.array([0, 3, 4, -1, 2], np.int32))
    write("h5csr_err_indices_unsorted_in_row.h5", indices=np.array([3, 0, 4, 1, 2], np.int32))
    write("h5csr_err_indices_duplicate_in_row.h5", indices=np.array([0, 0, 4, 1, 2], np.int32))
    write("h5csr_err_indices_int64_beyond_int32.h5", indices=np.array([0, 3, 2 ** 40, 1, 2], np.int64))
    # ---- data -------------------------------------------------------------------------
    write("h5csr_err_data_missing.h5", data=None)
    write("h5csr_err_data_integer.h5", data=np.array([1, 2, 3, 4, 5], np.int64))
    write("h5csr_err_data_float16.h5", data=DATA.astype(np.float16))
    write("h5csr_err_data_length_mismatch.h5", data=DATA[:4])
    write("h5csr_err_data_nan.h5", data=np.array([1.5, -2.0, np.nan, 4.0, 0.5]))
    write("h5csr_err_data_inf.h5", data=np.array([1.5, -2.0, 3.0, 4.0, -np.inf]))
    # ---- ids --------------------------------------------------------------------------
    write("h5csr_err_row_ids_wrong_length.h5", row_ids=ROW_IDS[:3])
    write("h5csr_err_row_ids_not_increasing.h5", row_ids=np.array([3, 10, 10, 40], np.int64))
    write("h5csr_err_col_ids_missing.h5", col_ids=None)
    write("h5csr_err_col_ids_float.h5", col_ids=COL_IDS.astype(np.float64))
    # ---- the file as a whole ----------------------------------------------------------
    whole = open(write("h5csr_err_file_truncated.h5"), "rb").read()
    with open(os.path.join(HERE, "h5csr_err_file_truncated.h5"), "wb") as f:
        f.write(whole[: len(whole) // 2])
    with open(os.path.join(HERE, "h5csr_err_file_not_hdf5.h5"), "wb") as f:
        f.write(b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes tests/io/malformed/: the malformed-input corpus.

File names: FORMAT_OUTCOME[_LLINE]_description.EXT
  FORMAT   mm | edges | ratings | bmf | dense (the --format to read it with),
           or factor (a factor file, read by io::read_factor_file)
  OUTCOME  err (must raise InputError / exit 3) or ok (well-formed, must read)
  LLINE    for err files: the 1-based line the error must name
Run from anywhere; rewrites the folder's text files (commit the result);
make_h5_corpus.py writes its HDF5 CSR files (h5csr_*).
"""
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "malformed")
MM = "%%MatrixMarket matrix coordinate real general\n"
MMP = "%%MatrixMarket matrix coordinate pattern general\n"
MMI = "%%MatrixMarket matrix coordinate integer general\n"
MMS = "%%MatrixMarket matrix coordinate real symmetric\n"
MMK = "%%MatrixMarket matrix coordinate real skew-symmetric\n"
MMA = "%%MatrixMarket matrix array real general\n"
JUNK = bytes(range(256)) * 3 + b"\x00\xff\xfe\x7fELF\x00\x00\n\x01\x02"

C = {}
# ---- Matrix Market ----------------------------------------------------------
C["mm_err_L1_empty.mtx"] = ""
C["mm_err_L1_blank_line_only.mtx"] = "\n"
C["mm_err_L1_no_banner.mtx"] = "3 3 1\n1 1 1.0\n"
C["mm_err_L1_banner_four_fields.mtx"] = "%%MatrixMarket matrix coordinate real\n2 2 1\n1 1 1\n"
C["mm_err_L1_banner_typo.mtx"] = "%%MatrixMarket matrix coordinat real general\n2 2 1\n1 1 1\n"
C["mm_err_L1_complex_field.mtx"] = "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1 0\n"
C["mm_err_L1_hermitian.mtx"] = "%%MatrixMarket matrix coordinate real hermitian\n2 2 1\n1 1 1\n"
C["mm_err_L1_vector_object.mtx"] = "%%MatrixMarket vector coordinate real general\n2 1\n1 1\n"
C["mm_err_L1_pattern_array.mtx"] = "%%MatrixMarket matrix array pattern general\n2 2\n"
C["mm_err_L1_banner_only.mtx"] = MM
C["mm_err_L3_truncated_after_comments.mtx"] = MM + "% a comment\n% another\n"
C["mm_err_L3_size_line_two_fields.mtx"] = MM + "% comment\n3 3\n1 1 1\n"
C["mm_err_L2_size_line_nonnumeric.mtx"] = MM + "3 x 1\n1 1 1\n"
C["mm_err_L2_negative_rows.mtx"] = MM + "-3 3 1\n1 1 1\n"
C["mm_err_L2_nnz_1e12.mtx"] = MM + "1000000 1000000 1000000000000\n1 1 1.0\n"
C["mm_err_L4_nnz_beyond_file_size.mtx"] = MM + "10 10 50\n1 1 1\n2 2 2\n"
C["mm_err_L2_nnz_beyond_capacity.mtx"] = MM + "2 2 5\n1 1 1\n1 2 1\n2 1 1\n2 2 1\n1 1 1\n"
C["mm_err_L2_rows_over_int32.mtx"] = MM + "3000000000 2 1\n1 1 1\n"
C["mm_err_L2_nonsquare_symmetric.mtx"] = MMS + "3 4 1\n1 1 1\n"
C["mm_err_L4_too_few_entries.mtx"] = MM + "3 3 3\n1 1 1\n2 2 2\n"
C["mm_err_L5_too_many_entries.mtx"] = MM + "3 3 2\n1 1 1\n2 2 2\n3 3 3\n"
C["mm_err_L3_row_index_zero_0based.mtx"] = MM + "3 3 2\n0 0 1\n2 2 2\n"
C["mm_err_L4_col_index_out_of_range.mtx"] = MM + "3 3 2\n1 1 1\n2 4 2\n"
C["mm_err_L4_row_index_out_of_range.mtx"] = MM + "3 3 2\n1 1 1\n4 1 2\n"
C["mm_err_L3_negative_index.mtx"] = MM + "3 3 1\n-1 2 1\n"
C["mm_err_L4_nan_value.mtx"] = MM + "3 3 2\n1 1 1\n2 2 nan\n"
C["mm_err_L3_inf_value.mtx"] = MM + "3 3 1\n1 1 -inf\n"
C["mm_err_L3_overflow_value.mtx"] = MM + "3 3 1\n1 1 1e999\n"
C["mm_err_L3_value_nonnumeric.mtx"] = MM + "3 3 1\n1 1 abc\n"
C["mm_err_L3_missing_value.mtx"] = MM + "3 3 1\n1 1\n"
C["mm_err_L3_extra_field.mtx"] = MM + "3 3 1\n1 1 1 1\n"
C["mm_err_L3_pattern_with_value.mtx"] = MMP + "3 3 1\n1 1 1\n"
C["mm_err_L5_duplicate_real.mtx"] = MM + "3 3 3\n1 1 1\n2 2 2\n1 1 3\n"
C["mm_err_L4_symmetric_both_triangles.mtx"] = MMS + "3 3 2\n2 1 1\n1 2 1\n"
C["mm_err_L3_skew_diagonal.mtx"] = MMK + "3 3 1\n2 2 1\n"
C["mm_err_L3_integer_with_fraction.mtx"] = MMI + "3 3 1\n1 1 1.5\n"
C["mm_err_L3_index_with_fraction.mtx"] = MM + "3 3 1\n1.5 1 1\n"
C["mm_err_L3_index_beyond_int64.mtx"] = MM + "3 3 1\n99999999999999999999 1 1\n"
C["mm_err_L5_array_too_few_values.mtx"] = MMA + "2 2\n1\n2\n3\n"
C["mm_err_L7_array_too_many_values.mtx"] = MMA + "2 2\n1\n2\n3\n4\n5\n"
C["mm_err_L4_array_nan.mtx"] = MMA + "2 2\n1\nNaN\n3\n4\n"
C["mm_err_L1_binary_junk.mtx"] = JUNK
C["mm_err_L3_binary_junk_after_header.mtx"] = MM.encode() + b"2 2 1\n\x00\x01\x02 \xff\xfe 1\n"
C["mm_ok_crlf.mtx"] = (MM + "% comment\n3 3 2\n1 1 1.5\n3 2 -2\n").replace("\n", "\r\n")
C["mm_ok_pattern_duplicates_merged.mtx"] = MMP + "3 3 3\n1 1\n1 1\n2 3\n"

# ---- edge lists ---------------------------------------------------------------
C["edges_err_L1_empty.txt"] = ""
C["edges_err_L2_only_comments.txt"] = "# Directed graph\n# Nodes: 0 Edges: 0\n"
C["edges_err_L1_count_line_only.txt"] = "42\n"
C["edges_err_L1_negative_count_line.txt"] = "-5\n0 1\n"
C["edges_err_L2_single_field_after_edges.txt"] = "0 1\n5\n1 2\n"
C["edges_err_L2_four_fields.txt"] = "0 1\n1 2 3 4\n"
C["edges_err_L3_mixed_weighted.txt"] = "0 1\n1 2\n2 3 0.5\n"
C["edges_err_L2_negative_id.txt"] = "0 1\n-1 2\n"
C["edges_err_L1_nonnumeric_id.txt"] = "a b\n"
C["edges_err_L2_nan_weight.txt"] = "0 1 1.0\n1 2 nan\n"
C["edges_err_L1_inf_weight.txt"] = "0 1 inf\n"
C["edges_err_L3_duplicate_weighted.txt"] = "0 1 1.0\n1 2 2.0\n0 1 3.0\n"
C["edges_err_L1_id_over_int32.txt"] = "0 2147483647\n"
C["edges_err_L1_float_id.txt"] = "1.0 2\n"
C["edges_err_L1_binary_junk.txt"] = JUNK
C["edges_err_L2_comma_separated.txt"] = "0 1\n1,2\n"
C["edges_ok_crlf_tabs_count_line.txt"] = "5\r\n0\t1\r\n0\t2\r\n3\t4\r\n"
C["edges_ok_duplicates_merged.txt"] = "# undirected, listed twice\n0 1\n1 0\n0 1\n2 2\n"
C["edges_ok_cr_only_line_ends.txt"] = "0\t1\r1\t2\r2\t0\r"
C["edges_ok_count_line_is_node_count.txt"] = "10\n0 1\n1 2\n"
C["edges_ok_count_line_is_edge_count.txt"] = "2\n0 7\n7 3\n"
C["edges_err_L1_count_line_disagrees.txt"] = "4\n0 5\n1 2\n"
C["edges_err_L1_count_line_cr_only.txt"] = "1\r0 1\r1 2\r2 3\r"

# ---- ratings --------------------------------------------------------------------
H = "userId,movieId,rating,timestamp\n"
C["ratings_err_L1_empty.csv"] = ""
C["ratings_err_L1_header_only.csv"] = H
C["ratings_err_L3_nonnumeric_rating.csv"] = H + "1,1,4.0,964982703\n1,2,good,964982703\n"
C["ratings_err_L2_nan_rating.csv"] = H + "1,1,NaN,964982703\n"
C["ratings_err_L3_inf_rating.csv"] = H + "1,1,4.0,964982703\n2,1,inf,964982703\n"
C["ratings_err_L3_missing_field.csv"] = H + "1,1,4.0,964982703\n1,2,3.0\n"
C["ratings_err_L2_empty_field.csv"] = H + "1,,4.0,964982703\n"
C["ratings_err_L2_five_fields.csv"] = H + "1,1,4.0,964982703,extra\n"
C["ratings_err_L4_duplicate_rating.csv"] = H + "1,1,4.0,1\n1,2,3.0,2\n1,1,5.0,3\n"
C["ratings_err_L2_fractional_user_id.csv"] = H + "1.5,1,4.0,964982703\n"
C["ratings_err_L2_nonnumeric_timestamp.csv"] = H + "1,1,4.0,yesterday\n"
C["ratings_err_L3_fractional_timestamp.csv"] = H + "1,1,4.0,964982703\n1,2,3.0,964982703.5\n"
C["ratings_err_L3_header_repeated.csv"] = H + "1,1,4.0,1\n" + H
C["ratings_err_L2_dat_wrong_separator.dat"] = "1::1::5::978300760\n1,2,3,978300760\n"
C["ratings_err_L2_tab_nonnumeric.tsv"] = "196\t242\t3\t881250949\n186\tx\t3\t891717742\n"
C["ratings_err_L2_user_id_beyond_int64.csv"] = H + "99999999999999999999,1,4.0,1\n"
C["ratings_err_L1_binary_junk.csv"] = JUNK
C["ratings_ok_crlf.csv"] = (H + "1,1,4.0,964982703\n1,3,4.0,964981247\n6,1,2.5,964981247\n").replace("\n", "\r\n")
C["ratings_ok_movielens_dat.dat"] = "1::1193::5::978300760\n1::661::3::978302109\n2::1193::4::978298413\n"

# ---- CuBin Boolean format -----------------------------------------------------------
C["bmf_err_L1_empty.in"] = ""
C["bmf_err_L1_header_two_fields.in"] = "10 10\n0 1\n"
C["bmf_err_L1_header_nonnumeric.in"] = "rows cols nnz\n0 1\n"
C["bmf_err_L1_negative_header.in"] = "-1 10 1\n0 1\n"
C["bmf_err_L1_nnz_1e12.in"] = "1000000 1000000 1000000000000\n0 0\n"
C["bmf_err_L1_nnz_beyond_capacity.in"] = "2 2 5\n0 0\n0 1\n1 0\n1 1\n0 0\n"
C["bmf_err_L1_rows_over_int32.in"] = "4294967296 2 1\n0 0\n"
C["bmf_err_L3_too_few_entries.in"] = "3 3 3\n0 0\n1 1\n"
C["bmf_err_L4_too_many_entries.in"] = "3 3 2\n0 0\n1 1\n2 2\n"
C["bmf_err_L3_one_based_index.in"] = "3 3 2\n1 1\n3 3\n"
C["bmf_err_L2_negative_index.in"] = "3 3 1\n-1 0\n"
C["bmf_err_L2_entry_three_fields.in"] = "3 3 1\n0 0 1\n"
C["bmf_err_L2_entry_nonnumeric.in"] = "3 3 1\n0 zero\n"
C["bmf_err_L3_duplicate_with_error_policy.in"] = "3 3 2\n0 0\n0 0\n"  # read with --duplicates error
C["bmf_err_L2_binary_junk.in"] = b"3 3 1\n" + JUNK
C["bmf_ok_crlf.in"] = "3 4 3\r\n0 0\r\n1 3\r\n2 1\r\n"
C["bmf_ok_duplicates_merged.in"] = "2 2 3\n0 0\n0 0\n1 1\n"

# ---- dense 0/1 text ----------------------------------------------------------------
C["dense_err_L1_empty.txt"] = ""
C["dense_err_L2_ragged_rows.txt"] = "0 1 1 0\n1 0 1\n0 0 0 1\n"
C["dense_err_L2_nonnumeric.txt"] = "0 1 1 0\n1 0 x 0\n"
C["dense_err_L1_nan.txt"] = "0 nan 1 0\n"
C["dense_err_L3_inf.txt"] = "0 1\n1 0\n-inf 0\n"
C["dense_err_L1_binary_junk.txt"] = JUNK
C["dense_ok_crlf.txt"] = "0 1 1 0\r\n1 0 1 1\r\n0 0 0 0\r\n"
C["dense_ok_cr_only.txt"] = "0 1 1\r1 0 0\r0 0 1\r"
C["dense_err_L3_cr_only_ragged.txt"] = "0 1 1\r1 0 0\r0 1\r"

# ---- factor files (io::read_factor_file; `kfactor predict --factors`) ---------------
F = "id,f0,f1\n"
C["factor_err_L1_empty.csv"] = ""
C["factor_err_L1_header_only.csv"] = F
C["factor_err_L3_header_only_blank_lines.csv"] = F + "\n\n"
C["factor_err_L1_no_factor_columns.csv"] = "id\n1\n"
C["factor_err_L1_ratings_header.csv"] = "userId,movieId,rating\n1,2,3\n"
C["factor_err_L1_no_header.csv"] = "1,0.5,0.25\n2,0.5,0.5\n"
C["factor_err_L3_ragged_short_row.csv"] = F + "1,0.5,0.25\n2,0.5\n"
C["factor_err_L2_ragged_long_row.csv"] = F + "1,0.5,0.25,9\n"
C["factor_err_L2_empty_field.csv"] = F + "1,,2\n"
C["factor_err_L2_nan.csv"] = F + "1,nan,0\n"
C["factor_err_L3_inf.csv"] = F + "1,1,2\n2,-inf,0\n"
C["factor_err_L2_overflow.csv"] = F + "1,1e999,0\n"
C["factor_err_L2_nonnumeric_value.csv"] = F + "1,x,0\n"
C["factor_err_L4_duplicate_id.csv"] = F + "7,1,1\n8,2,2\n7,3,3\n"
C["factor_err_L2_fractional_id.csv"] = F + "1.5,1,1\n"
C["factor_err_L2_id_beyond_int64.csv"] = F + "99999999999999999999,1,1\n"
C["factor_err_L2_whitespace_separated.csv"] = F + "1 0.5 0.25\n"
C["factor_err_L1_binary_junk.csv"] = JUNK
C["factor_err_L2_array_huge_claim.mtx"] = MMA + "1000000000 1000000000\n1\n"
C["factor_err_L1_coordinate_not_array.mtx"] = MM + "2 2 1\n1 1 1\n"
C["factor_err_L2_array_empty.mtx"] = MMA + "0 3\n"
C["factor_err_L4_array_nan.mtx"] = MMA + "1 2\n1\nnan\n"
C["factor_ok_written.csv"] = F + "10,0.5,-1\n3,2,0\n"
C["factor_ok_cr_only.csv"] = "id,f0\r5,1\r6,2\r"
C["factor_ok_array.mtx"] = MMA + "% written by kfactor\n2 2\n1\n2\n3\n4\n"

# ---- resource limits (sizes checked before anything is allocated) ------------------
C["mm_err_L2_array_1e12_entries.mtx"] = MMA + "1000000 1000000\n1.0\n2.0\n"
C["mm_err_L2_array_int32max_square.mtx"] = MMA + "2147483647 2147483647\n1.0\n"
C["mm_err_L2_symmetric_nnz_1e12.mtx"] = MMS + "2147483647 2147483647 1000000000000\n1 1 1.0\n"
C["mm_err_L2_pattern_nnz_beyond_shape.mtx"] = MMP + "2147483647 2147483647 4611686018427387904\n1 1\n"
C["mm_err_L2_nnz_beyond_int64.mtx"] = MM + "10 10 99999999999999999999\n1 1 1.0\n"
C["bmf_err_L1_bits_beyond_int32_words.in"] = "4294967296 4294967296 1\n0 0\n"

# The HDF5 CSR files (h5csr_*) are make_h5_corpus.py's.
for name in os.listdir(HERE):
    if not name.startswith("h5csr_"):
        os.remove(os.path.join(HERE, name))
for name, body in C.items():
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(body if isinstance(body, bytes) else body.encode())
print(len(C), "files;", sum(1 for n in C if "_err_" in n), "malformed")

#pragma once
/// \file
/// The one entry point through which commands read their input: any text
/// format of io/read.hpp, or an HDF5 CSR file (io/hdf5_csr.hpp). With
/// Format::automatic a file that starts with the HDF5 signature is read as
/// HDF5 CSR, anything else as text (io::detect_format). Original ids come
/// back with the matrix where the input has them (ratings files, HDF5 CSR
/// files with /row_ids and /col_ids); otherwise the id lists are empty (an
/// index is its id).

#include <kfactor/io/read.hpp>

#include <string>

namespace kfactor::io {

/// What an input is, from its first bytes only.
struct InputKind {
  Format format = Format::automatic;  ///< the format read_input() reads it in
  bool dense = false;                 ///< a dense layout (Matrix Market array, dense text)
};
/// The format read_input() reads `path` in and whether it is dense, from
/// the HDF5 signature or as much of the text's start as its header (and,
/// for Format::automatic, detect_format()'s sample) needs. Throws the
/// reader's errors for a bad header.
InputKind probe_input(const std::string& path, Format format = Format::automatic, const ReadOptions& opt = {});

/// Reads `path` (see the file comment). Errors as the format's reader's:
/// InputError for bad input, UsageError for h5csr in a build without HDF5.
template <class T>
RatingData<T> read_input(const std::string& path, Format format = Format::automatic, const ReadOptions& opt = {},
                         ReadInfo* info = nullptr);

extern template RatingData<float> read_input<float>(const std::string&, Format, const ReadOptions&, ReadInfo*);
extern template RatingData<double> read_input<double>(const std::string&, Format, const ReadOptions&, ReadInfo*);

}  // namespace kfactor::io

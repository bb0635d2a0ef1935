// HDF5 CSR files in a build without HDF5: every entry point but
// is_hdf5_file (io/input.cpp) throws UsageError.
#include <kfactor/io/hdf5_csr.hpp>

namespace kfactor::io {

namespace {
[[noreturn]] void no_hdf5(const std::string& path) {
  throw UsageError(path + ": HDF5 CSR files need kfactor built with HDF5");
}
}  // namespace

struct Hdf5CsrReader::Impl {};

Hdf5CsrReader::Hdf5CsrReader(const std::string& path, const ReadOptions&) { no_hdf5(path); }
#if defined(KFACTOR_HAVE_MPI)
Hdf5CsrReader::Hdf5CsrReader(const std::string& path, MPI_Comm, const ReadOptions&) { no_hdf5(path); }
#endif
Hdf5CsrReader::~Hdf5CsrReader() = default;
Hdf5CsrReader::Hdf5CsrReader(Hdf5CsrReader&&) noexcept = default;
Hdf5CsrReader& Hdf5CsrReader::operator=(Hdf5CsrReader&&) noexcept = default;
const Hdf5CsrLayout& Hdf5CsrReader::layout() const { no_hdf5(""); }
const std::string& Hdf5CsrReader::path() const { no_hdf5(""); }
ReadInfo Hdf5CsrReader::info() const { no_hdf5(""); }
const std::vector<std::int64_t>& Hdf5CsrReader::row_map() { no_hdf5(""); }
std::vector<std::int64_t> Hdf5CsrReader::row_ids() { no_hdf5(""); }
std::vector<std::int64_t> Hdf5CsrReader::col_ids() { no_hdf5(""); }
template <class T>
CsrRows<T> Hdf5CsrReader::read_rows(std::int64_t, std::int64_t) {
  no_hdf5("");
}

template <class T>
void write_hdf5_csr(const std::string& path, const CooMatrix<T>&, const std::vector<std::int64_t>&,
                    const std::vector<std::int64_t>&, const Hdf5CsrWriteOptions&) {
  no_hdf5(path);
}
template <class T>
RatingData<T> read_hdf5_csr(const std::string& path, const ReadOptions&, ReadInfo*) {
  no_hdf5(path);
}
template <class T>
CsrRows<T> read_hdf5_csr_rows(const std::string& path, std::int64_t, std::int64_t, const ReadOptions&) {
  no_hdf5(path);
}

#define KFACTOR_HDF5_CSR_INSTANTIATE(T)                                                                      \
  template void write_hdf5_csr<T>(const std::string&, const CooMatrix<T>&, const std::vector<std::int64_t>&, \
                                  const std::vector<std::int64_t>&, const Hdf5CsrWriteOptions&);             \
  template RatingData<T> read_hdf5_csr<T>(const std::string&, const ReadOptions&, ReadInfo*);                \
  template CsrRows<T> Hdf5CsrReader::read_rows<T>(std::int64_t, std::int64_t);                               \
  template CsrRows<T> read_hdf5_csr_rows<T>(const std::string&, std::int64_t, std::int64_t, const ReadOptions&);
KFACTOR_HDF5_CSR_INSTANTIATE(float)
KFACTOR_HDF5_CSR_INSTANTIATE(double)

}  // namespace kfactor::io

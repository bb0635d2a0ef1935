// io::Hdf5CsrReader opened by every rank of a communicator
// (include/kfactor/io/hdf5_csr.hpp): with parallel HDF5 through the MPI-IO
// driver with collective transfers, otherwise each rank on its own.
#include <kfactor/config.hpp>

#include "hdf5_csr_impl.hpp"

#include <string>

namespace kfactor::io {

namespace h5 = kfactor::detail::h5;

Hdf5CsrReader::Hdf5CsrReader(const std::string& path, MPI_Comm comm, const ReadOptions& opt) {
  const h5::Quiet quiet;
  auto fapl = hdf5_csr_file_access();
  h5::PropertyList dxpl(H5Pcreate(H5P_DATASET_XFER), h5::Mode::read, "creating transfer properties");
#if defined(KFACTOR_HAVE_PARALLEL_HDF5)
  h5::check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), h5::Mode::read, path + ": selecting the MPI-IO driver");
  h5::check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), h5::Mode::read, path + ": collective transfers");
#else
  (void)comm;
#endif
  auto agree = [comm](std::exception_ptr local) {
    int mine = local ? 1 : 0, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, comm);
    if (local) std::rethrow_exception(local);
    if (any) throw detail::FailedElsewhere("HDF5 CSR: reading failed on another rank");
  };
  // Opening is collective too: every rank must reach H5Fopen (a rank
  // without the file says so first), and none may go on to the first
  // collective read while another failed to open.
  auto local = [](auto&& f) {
    std::exception_ptr failed;
    try {
      f();
    } catch (...) {
      failed = std::current_exception();
    }
    return failed;
  };
  agree(local([&] { check_regular_file(path); }));
  agree(local([&] { impl_ = std::make_unique<Impl>(path, opt, fapl, std::move(dxpl)); }));
  impl_->agree = agree;
}

}  // namespace kfactor::io

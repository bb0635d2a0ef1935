// kfactor._core's SDDMM (kfactor.sddmm calls it): P = S o (A B^T) at S's
// stored entries through kfactor::sddmm, every operand used in place.
#include "common.hpp"

#include <kfactor/sddmm/sddmm.hpp>

#include <string>

namespace kfactor::python {
namespace {

template <class T>
void define_dtype(nb::module_& m) {
  m.def(
      "sddmm",
      [](In<std::int64_t, 1> indptr, In<std::int32_t, 1> indices, In<T, 1> data, std::int64_t cols, In<T, 2> A,
         In<T, 2> B, const std::string& device) {
        return on_device(device, [&](const auto& exec) {
          using Mem = typename std::decay_t<decltype(exec)>::memory_space;
          const auto S = csr_in<Mem>(indptr, indices, data, cols);
          const auto Av = dense_in<Mem>(A, "A");
          const auto Bv = dense_in<Mem>(B, "B");
          record_input(Av.data());
          ProgressBridge bridge{nb::none()};
          const auto P = without_gil(bridge, [&] { return kfactor::sddmm(exec, S, Av, Bv); });
          return array_out(P.values, on_cuda(data));
        });
      },
      nb::arg("indptr").noconvert(), nb::arg("indices").noconvert(), nb::arg("data").noconvert(), nb::arg("cols"),
      nb::arg("A").noconvert(), nb::arg("B").noconvert(), nb::arg("device") = "cpu",
      "The values of S o (A B^T) at S's stored entries, in S's order.");
}

}  // namespace

void register_sddmm(nb::module_& m) {
  define_dtype<double>(m);
  define_dtype<float>(m);
}

}  // namespace kfactor::python

// Explicit instantiations of the NMF solver (see kfactor/nmf/nmf.hpp).
#define KFACTOR_NMF_INSTANTIATING
#include <kfactor/nmf/nmf.hpp>

#define KFACTOR_NMF_INSTANTIATE(S, T) KFACTOR_NMF_ETI(, S, T)

namespace kfactor::nmf {
KFACTOR_ETI_FOR_EACH(KFACTOR_NMF_INSTANTIATE)
}  // namespace kfactor::nmf

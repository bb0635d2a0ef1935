// Explicit instantiations of the distributed BMF solver (see
// kfactor/distributed/bmf.hpp).
#define KFACTOR_DISTRIBUTED_INSTANTIATING
#include <kfactor/distributed/bmf.hpp>

#define KFACTOR_DISTRIBUTED_INSTANTIATE_BMF(S, T) KFACTOR_DISTRIBUTED_BMF_ETI(, S, T)

namespace kfactor::distributed::bmf {
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_DISTRIBUTED_INSTANTIATE_BMF, void)
}  // namespace kfactor::distributed::bmf

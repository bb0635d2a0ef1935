// Explicit instantiations of the distributed MNMF solver (see
// kfactor/distributed/mnmf.hpp).
#define KFACTOR_DISTRIBUTED_INSTANTIATING
#include <kfactor/distributed/mnmf.hpp>

#define KFACTOR_DISTRIBUTED_INSTANTIATE_MNMF(S, T) KFACTOR_DISTRIBUTED_MNMF_ETI(, S, T)

namespace kfactor::distributed::mnmf {
KFACTOR_ETI_FOR_EACH(KFACTOR_DISTRIBUTED_INSTANTIATE_MNMF)
}  // namespace kfactor::distributed::mnmf

// Explicit instantiations of the distributed NMF and ALS solvers (see
// kfactor/distributed/nmf.hpp and als.hpp).
#define KFACTOR_DISTRIBUTED_INSTANTIATING
#include <kfactor/distributed/als.hpp>
#include <kfactor/distributed/nmf.hpp>

#define KFACTOR_DISTRIBUTED_INSTANTIATE_ALS(S, T) KFACTOR_DISTRIBUTED_ALS_ETI(, S, T)
#define KFACTOR_DISTRIBUTED_INSTANTIATE_NMF(S, T) KFACTOR_DISTRIBUTED_NMF_ETI(, S, T)

namespace kfactor::distributed::als {
KFACTOR_ETI_FOR_EACH(KFACTOR_DISTRIBUTED_INSTANTIATE_ALS)
}  // namespace kfactor::distributed::als
namespace kfactor::distributed::nmf {
KFACTOR_ETI_FOR_EACH(KFACTOR_DISTRIBUTED_INSTANTIATE_NMF)
}  // namespace kfactor::distributed::nmf

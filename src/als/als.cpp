// Explicit instantiations of the ALS solver (see kfactor/als/als.hpp).
#define KFACTOR_ALS_INSTANTIATING
#include <kfactor/als/als.hpp>

#define KFACTOR_ALS_INSTANTIATE(S, T) KFACTOR_ALS_ETI(, S, T)

namespace kfactor::als {
KFACTOR_ETI_FOR_EACH(KFACTOR_ALS_INSTANTIATE)
}  // namespace kfactor::als

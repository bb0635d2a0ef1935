// Explicit instantiations of the SDDMM plan: (double, double).
#include <kfactor/sddmm/plan.hpp>

namespace kfactor {
#define KFACTOR_SDDMM_PLAN_ETI(Space, T) template class SddmmPlan<Space, T, T>;
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_SDDMM_PLAN_ETI, double)
#undef KFACTOR_SDDMM_PLAN_ETI
}  // namespace kfactor

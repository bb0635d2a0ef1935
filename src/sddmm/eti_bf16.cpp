// Explicit instantiations of the SDDMM plan: (float, bhalf_t), where the
// Kokkos build has a real 16-bit type.
#include <kfactor/sddmm/plan.hpp>

namespace kfactor {
#if !KOKKOS_BHALF_T_IS_FLOAT
#define KFACTOR_SDDMM_PLAN_ETI_BF16(Space, T) template class SddmmPlan<Space, float, Kokkos::Experimental::bhalf_t>;
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_SDDMM_PLAN_ETI_BF16, float)
#undef KFACTOR_SDDMM_PLAN_ETI_BF16
#endif
}  // namespace kfactor

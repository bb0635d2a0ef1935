// Explicit instantiations of the SDDMM plan: (float, half_t), where the
// Kokkos build has a real 16-bit type.
#include <kfactor/sddmm/plan.hpp>

namespace kfactor {
#if !KOKKOS_HALF_T_IS_FLOAT
#define KFACTOR_SDDMM_PLAN_ETI_FP16(Space, T) template class SddmmPlan<Space, float, Kokkos::Experimental::half_t>;
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_SDDMM_PLAN_ETI_FP16, float)
#undef KFACTOR_SDDMM_PLAN_ETI_FP16
#endif
}  // namespace kfactor

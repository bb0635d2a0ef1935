// Explicit instantiations of the SDDMM plan for every enabled execution space:
// (float, float), (double, double), and (float, bhalf_t / half_t) where the
// Kokkos build has real 16-bit types.
#include <kfactor/sddmm/plan.hpp>

namespace kfactor {

#define KFACTOR_SDDMM_PLAN_ETI(Space, T) template class SddmmPlan<Space, T, T>;
KFACTOR_ETI_FOR_EACH(KFACTOR_SDDMM_PLAN_ETI)
#undef KFACTOR_SDDMM_PLAN_ETI
#if !KOKKOS_BHALF_T_IS_FLOAT
#define KFACTOR_SDDMM_PLAN_ETI_BF16(Space, T) template class SddmmPlan<Space, float, Kokkos::Experimental::bhalf_t>;
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_SDDMM_PLAN_ETI_BF16, float)
#undef KFACTOR_SDDMM_PLAN_ETI_BF16
#endif
#if !KOKKOS_HALF_T_IS_FLOAT
#define KFACTOR_SDDMM_PLAN_ETI_FP16(Space, T) template class SddmmPlan<Space, float, Kokkos::Experimental::half_t>;
KFACTOR_ETI_FOR_EACH_SPACE(KFACTOR_SDDMM_PLAN_ETI_FP16, float)
#undef KFACTOR_SDDMM_PLAN_ETI_FP16
#endif

}  // namespace kfactor

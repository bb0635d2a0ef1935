// Explicit instantiations of the MNMF solver and the kNN graph builder.
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>

#define KFACTOR_MNMF_INSTANTIATE(S, T) KFACTOR_MNMF_ETI(, S, T) KFACTOR_MNMF_KNN_ETI(, S, T)
KFACTOR_ETI_FOR_EACH(KFACTOR_MNMF_INSTANTIATE)

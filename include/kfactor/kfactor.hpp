#pragma once
/// \file
/// Everything public in kfactor. Layers (see README): core -> kernels ->
/// solvers (nmf, als, bmf, mnmf, sddmm) -> io -> distributed; drivers/ holds
/// the `kfactor` command. MPI-only headers (distributed/) are not included.

#include <kfactor/als/als.hpp>
#include <kfactor/bmf/bmf.hpp>
#include <kfactor/config.hpp>
#include <kfactor/core/build_info.hpp>
#include <kfactor/core/contract.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/planted.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/range.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/core/timing.hpp>
#include <kfactor/io/bit_factor.hpp>
#include <kfactor/io/checkpoint.hpp>
#include <kfactor/io/factor_file.hpp>
#include <kfactor/io/ratings.hpp>
#include <kfactor/io/read.hpp>
#include <kfactor/io/report_json.hpp>
#include <kfactor/io/sddmm_output.hpp>
#include <kfactor/io/write.hpp>
#include <kfactor/kernels/batched_cholesky.hpp>
#include <kfactor/kernels/bit_matrix.hpp>
#include <kfactor/kernels/gemm.hpp>
#include <kfactor/kernels/sddmm.hpp>
#include <kfactor/kernels/spmm.hpp>
#include <kfactor/mnmf/knn_graph.hpp>
#include <kfactor/mnmf/mnmf.hpp>
#include <kfactor/mnmf/model_selection.hpp>
#include <kfactor/nmf/nmf.hpp>
#include <kfactor/sddmm/sddmm.hpp>

#pragma once
/// \file
/// Everything public in kfactor. Layers (see README): core -> kernels ->
/// solvers (nmf, als, bmf, mnmf, sddmm) -> io -> distributed; drivers/ holds
/// the `kfactor` command.

#include <kfactor/config.hpp>
#include <kfactor/core/build_info.hpp>
#include <kfactor/core/convert.hpp>
#include <kfactor/core/error.hpp>
#include <kfactor/core/matrix.hpp>
#include <kfactor/core/metrics.hpp>
#include <kfactor/core/random.hpp>
#include <kfactor/core/report.hpp>
#include <kfactor/core/solver.hpp>
#include <kfactor/core/spaces.hpp>
#include <kfactor/io/report_json.hpp>
#include <kfactor/kernels/gemm.hpp>

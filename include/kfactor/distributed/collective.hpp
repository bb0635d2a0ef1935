#pragma once
/// \file
/// Error agreement for MPI runs. A rank that meets bad input must not leave
/// the others waiting in a collective: every step that can fail on one rank
/// (reading a file, validating data, loading a checkpoint) runs inside
/// `agree`, which makes every rank throw the same kfactor error, with the
/// message of the lowest failing rank. `require_same` detects ranks that were
/// given different inputs or options.

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>

#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace kfactor::distributed {

namespace detail {
/// Error kinds as sent between ranks (the exit codes of core/error.hpp).
[[noreturn]] inline void throw_kind(int code, const std::string& what) {
  switch (code) {
    case 2: throw UsageError(what);
    case 3: throw InputError(what);
    default: throw RuntimeFailure(what);
  }
}

/// Set when every rank is known to throw the same error, so a driver can end
/// normally instead of aborting the whole job.
inline bool error_agreed = false;

/// Runs g(), turning any exception into (exit code, message); code 0: none.
template <class G>
void capture(G&& g, int& code, std::string& what) noexcept {
  try {
    g();
  } catch (const Error& e) {
    code = e.exit_code() == 2 || e.exit_code() == 3 ? e.exit_code() : 4;
    what = e.what();
  } catch (const std::bad_alloc&) {
    code = 4;
    what = "out of memory";
  } catch (const std::exception& e) {
    code = 4;
    what = e.what();
  }
}

/// Collective: if any rank has code != 0, every rank throws the error of the
/// lowest such rank.
inline void settle(MPI_Comm comm, int code, const std::string& what) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int mine = code != 0 ? rank : size;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int sent[2] = {code, static_cast<int>(what.size())};
  MPI_Bcast(sent, 2, MPI_INT, first, comm);
  std::string message = rank == first ? what : std::string(static_cast<std::size_t>(sent[1]), '\0');
  MPI_Bcast(message.data(), sent[1], MPI_CHAR, first, comm);
  error_agreed = true;
  throw_kind(sent[0], size > 1 ? "rank " + std::to_string(first) + ": " + message : message);
}
}  // namespace detail

/// Runs `fn()` on every rank of `comm` and returns its result. If it throws
/// on any rank, every rank throws the error of the lowest failing rank (same
/// kind and message, prefixed with that rank). Collective: every rank must
/// call it at the same point.
template <class F>
auto agree(MPI_Comm comm, F&& fn) -> decltype(fn()) {
  using R = decltype(fn());
  int code = 0;
  std::string what;
  if constexpr (std::is_void_v<R>) {
    detail::capture([&] { fn(); }, code, what);
    detail::settle(comm, code, what);
  } else {
    std::optional<R> result;
    detail::capture([&] { result.emplace(fn()); }, code, what);
    detail::settle(comm, code, what);
    return std::move(*result);
  }
}

/// Throws InputError on every rank unless `value` is the same on all ranks of
/// `comm` (e.g. an input fingerprint, a shape, the rank K). Collective.
inline void require_same(MPI_Comm comm, std::uint64_t value, const std::string& what) {
  std::uint64_t lo = value, hi = value;
  MPI_Allreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  if (lo != hi) throw InputError("ranks disagree on " + what + " (" + std::to_string(lo) + " vs " + std::to_string(hi) + ")");
}

}  // namespace kfactor::distributed
#endif

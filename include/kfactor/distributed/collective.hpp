#pragma once
/// \file
/// Error agreement for MPI runs. A rank that meets bad input must not leave
/// the others waiting in a collective: every step that can fail on one rank
/// (reading a file, validating data, loading a checkpoint) runs inside
/// `agree`, which makes every rank throw the same kfactor error, with the
/// message of the lowest failing rank. `require_same` detects ranks that were
/// given different inputs or options. An error that escapes agreement (one
/// rank fails between two collectives) ends the job through `abort_job`.

#include <kfactor/config.hpp>
#include <kfactor/core/error.hpp>

#if defined(KFACTOR_HAVE_MPI)
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace kfactor::distributed {

/// Marks an error that every rank of the communicator throws (from agree or
/// require_same), so a driver that catches it can end normally on every rank
/// instead of aborting the job: see is_agreed().
struct AgreedError {
  virtual ~AgreedError() = default;
};

namespace detail {
/// A kfactor error of kind E that every rank throws.
template <class E>
class Agreed final : public E, public AgreedError {
 public:
  explicit Agreed(const std::string& what) : E(what) {}
};

/// Error kinds as sent between ranks (the exit codes of core/error.hpp).
[[noreturn]] inline void throw_kind(int code, const std::string& what) {
  switch (code) {
    case 2: throw Agreed<UsageError>(what);
    case 3: throw Agreed<InputError>(what);
    default: throw Agreed<RuntimeFailure>(what);
  }
}

/// Runs g(), turning any exception into (exit code, message); code 0: none.
/// `agreed`: the error was already agreed (a nested agree), so every rank
/// holds it and its message already names the rank.
template <class G>
void capture(G&& g, int& code, std::string& what, int& agreed) noexcept {
  try {
    g();
  } catch (const Error& e) {
    code = e.exit_code() == 2 || e.exit_code() == 3 ? e.exit_code() : 4;
    what = e.what();
    agreed = dynamic_cast<const AgreedError*>(&e) != nullptr;
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
inline void settle(MPI_Comm comm, int code, const std::string& what, int agreed) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int mine = code != 0 ? rank : size;
  int first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == size) return;
  int sent[3] = {code, static_cast<int>(what.size()), agreed};
  MPI_Bcast(sent, 3, MPI_INT, first, comm);
  std::string message = rank == first ? what : std::string(static_cast<std::size_t>(sent[1]), '\0');
  MPI_Bcast(message.data(), sent[1], MPI_CHAR, first, comm);
  throw_kind(sent[0], size > 1 && !sent[2] ? "rank " + std::to_string(first) + ": " + message : message);
}
}  // namespace detail

/// Runs `fn()` on every rank of `comm` and returns its result. If it throws
/// on any rank, every rank throws the error of the lowest failing rank (same
/// kind and message, prefixed with that rank). Collective: every rank must
/// call it at the same point.
template <class F>
auto agree(MPI_Comm comm, F&& fn) -> decltype(fn()) {
  using R = decltype(fn());
  int code = 0, agreed = 0;
  std::string what;
  if constexpr (std::is_void_v<R>) {
    detail::capture([&] { fn(); }, code, what, agreed);
    detail::settle(comm, code, what, agreed);
  } else {
    std::optional<R> result;
    detail::capture([&] { result.emplace(fn()); }, code, what, agreed);
    detail::settle(comm, code, what, agreed);
    return std::move(*result);
  }
}

/// True when `e` was thrown on every rank alike (by agree or require_same).
inline bool is_agreed(const std::exception& e) noexcept { return dynamic_cast<const AgreedError*>(&e) != nullptr; }

/// For drivers (the library itself throws and never ends the process): ends
/// the whole job after an error that this rank may hold alone (one that is
/// not is_agreed(), e.g. thrown between two collectives), since the other
/// ranks may be waiting in a collective that this rank will never enter and
/// returning would hang them. Prints "kfactor: error: rank R: what" to
/// stderr and calls MPI_Abort(comm, code), which ends every rank of the job;
/// Open MPI's mpiexec exits with `code` (docs/distributed.md). Call it before
/// anything else collective: destructors on the way here must not wait for
/// the other ranks either (the checkpoint writer does not). Never returns.
[[noreturn]] inline void abort_job(MPI_Comm comm, int code, const std::string& what) noexcept {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::fprintf(stderr, "kfactor: error: rank %d: %s\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(comm, code);
  std::abort();  // MPI_Abort does not return
}

/// Throws InputError on every rank unless `value` is the same on all ranks of
/// `comm` (e.g. an input fingerprint, a shape, the rank K); the message names
/// `what`, the smallest and largest values and the lowest rank holding each.
/// Collective.
inline void require_same(MPI_Comm comm, std::uint64_t value, const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::uint64_t lo = value, hi = value;
  MPI_Allreduce(&value, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&value, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  if (lo == hi) return;
  int ranks[2] = {value == lo ? rank : INT_MAX, value == hi ? rank : INT_MAX}, first[2] = {0, 0};
  MPI_Allreduce(ranks, first, 2, MPI_INT, MPI_MIN, comm);
  detail::throw_kind(3, "ranks disagree on " + what + ": rank " + std::to_string(first[0]) + " has " +
                            std::to_string(lo) + ", rank " + std::to_string(first[1]) + " has " + std::to_string(hi));
}

}  // namespace kfactor::distributed
#endif
